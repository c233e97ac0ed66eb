"""The ``compose`` provider: a docker compose project per run and stack.

Lifecycle: reap what dead runs left -> base image (pinned digest, or seeded offline) -> build
only when the content tag is new -> ``up`` under a unique project name with every container,
network and volume labelled with run, stack and owner -> the backend's own readiness query ->
per-run preparation (tokens) -> info for every process of the run to attach.

The compose CLI is called directly rather than through testcontainers' ``DockerCompose``: that
class has no project-name option (two sessions would share one project) and no way to add
labels to networks and volumes. The docker SDK does the rest (find, exec, copy, reap).
"""

from __future__ import annotations

import dataclasses
import re
import socket
import time
from collections.abc import Collection
from typing import Any

from pytest_stacks import dockerutil, environ, progress, registry
from pytest_stacks.errors import BackendCallError, InfrastructureError, StacksError
from pytest_stacks.gobuild import GoModuleBuild
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import apptainer_images as apptainer
from pytest_stacks.providers import (
    build_log,
    compose_files,
    images,
    object_store,
    preflight,
    reaper,
    shared_folder,
    stack_adapter,
    stack_health,
)
from pytest_stacks.providers import oci_bundles as oci
from pytest_stacks.providers.access import access_for
from pytest_stacks.providers.base import Attached, RunContext, StackInfo
from pytest_stacks.providers.labels import LABEL_STACK
from pytest_stacks.transports.docker_exec import DockerExecTransport


def project_name(stack: Stack, ctx: RunContext) -> str:
    slug = re.sub(r"[^a-z0-9-]", "_", stack.name.lower())  # slurm-24.11 -> slurm-24_11
    return f"pst-{slug}-{ctx.run_id.rsplit('-', 1)[-1]}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _build_args(stack: Stack) -> dict[str, str]:
    """The image's build args: the manifest's, and a container runtime's (part of what is
    built, so part of the content tag)."""
    assert stack.compose is not None
    return {**stack.compose.build_args, **oci.build_args(stack), **apptainer.build_args(stack)}


def _upstream_reference(stack: Stack, ctx: RunContext) -> str:
    """The upstream image a stack runs as is (no build), floating in the canary lane; "" if
    the stack is built from its folder."""
    if stack.image is None:
        return ""
    if ctx.lane == "canary" and stack.canary is not None and stack.canary.image_tag:
        return f"{stack.image.name}:{stack.canary.image_tag}"  # floating: no digest
    return stack.image.reference


class ComposeProvider:
    @staticmethod
    def _engine_ok() -> bool:
        """Whether the engine answers (its absence is said by the preflight, with the fix)."""
        try:
            preflight.engine()
        except StacksError:
            return False
        return True

    def _base_cmd(self, info: StackInfo) -> list[str]:
        cmd = ["compose", "-p", info.project]
        for file in info.files:
            cmd += ["-f", file]
        return cmd

    def _env(self, info: StackInfo) -> dict[str, str]:
        return environ.snapshot(info.env)

    def preflight(self, stack: Stack, ctx: RunContext) -> None:
        """Everything that can refuse in seconds, before any seed, pull, Go or image build."""
        preflight.engine(stack)
        preflight.compose()
        if stack.base_image is not None:
            preflight.base_obtainable(stack.base_image)
        upstream = _upstream_reference(stack, ctx)
        if upstream:
            preflight.image_obtainable(upstream)
        if "go" in stack.requires:
            preflight.go_toolchain()
        if oci.build_args(stack) or apptainer.build_args(stack):
            preflight.user_namespaces(stack.name)

    def _prepare(self, stack: Stack, ctx: RunContext) -> tuple[str, str, dict[str, str]]:
        """Preflight, then what the build needs: the base image, the upstream image, the
        host-built programs (base reference, upstream reference, compose environment)."""
        upstream = _upstream_reference(stack, ctx)
        preflight.refusing(stack.name, lambda: self.preflight(stack, ctx))
        try:
            base = images.ensure_base_image(stack.base_image) if stack.base_image else ""
            if upstream:
                images.ensure_image(upstream, refresh=ctx.lane == "canary")
            host_env = stack_adapter(stack).host_environment(stack, stack.timeouts.build)
            host_env.update(object_store.host_environment(stack, base, stack.timeouts.build))
            oci.ensure_images(stack, base, stack.timeouts.build)
            apptainer.ensure_images(stack, base, stack.timeouts.build)
        except StacksError as exc:
            raise InfrastructureError(stack.name, str(exc)) from None
        return base, upstream, host_env

    def programs(self, stack: Stack) -> list[GoModuleBuild]:
        store = object_store.config_of(stack)
        return [*stack_adapter(stack).host_programs(stack),
                *([object_store.program(store)] if store else [])]

    def build(self, stack: Stack, ctx: RunContext) -> None:
        """Everything ``up`` makes before it starts anything (base image, programs built on
        the host, the stack's image), so that a later run only starts it. Nothing runs."""
        stack = stack.floating() if ctx.lane == "canary" else stack
        base, upstream, host_env = self._prepare(stack, ctx)
        if upstream or ctx.lane == "canary":
            return  # an upstream image is pulled, a canary built per run: nothing to keep
        self._build(stack, self._plan(stack, ctx, base, upstream, host_env))

    def up(self, stack: Stack, ctx: RunContext) -> StackInfo:
        assert stack.compose is not None
        stack = stack.floating() if ctx.lane == "canary" else stack  # the pins' checks too
        for problem in reaper.reap_dead(keep_run=ctx.run_id)[1] if self._engine_ok() else []:
            progress.say(f"could not remove what a dead run left: {problem}")
        base, upstream, host_env = self._prepare(stack, ctx)
        host_env.update(access_for(stack).environment(stack, ctx))
        plan = self._plan(stack, ctx, base, upstream, host_env)
        try:
            built, build_s = (None, None) if upstream else self._build(stack, plan)
            with progress.step("compose up"):
                started = dockerutil.run_cli([*self._base_cmd(plan), "up", "-d", "--no-build"],
                                             env=self._env(plan), timeout=stack.timeouts.up)
            if started.returncode != 0:
                raise InfrastructureError(
                    stack.name, f"`docker compose up` failed:\n{build_log.tail(started.stderr)}",
                    self._compose_logs(plan))
            container, endpoints = self._serve(stack, ctx, plan)
        except BaseException:
            if plan.remove_image:
                # The per-run canary image is removed by `down`, which a failed bring-up
                # never reaches: take the half-started stack and the image away now.
                reaper.sweep_run(ctx.run_id, stack.name)
                dockerutil.run_cli(["rmi", "-f", plan.image], timeout=120)
            raise
        # The finished record, built once from what each step returned.
        return dataclasses.replace(plan, built=built, build_s=build_s, container=container,
                                   endpoints=endpoints)

    def _plan(self, stack: Stack, ctx: RunContext, base: str, upstream: str,
              host_env: dict[str, str] | None = None) -> StackInfo:
        """The compose invocation (project, files, ports, environment, image tag): the part of
        the stack's record known before anything starts."""
        assert stack.compose is not None
        build_args = _build_args(stack)  # floating already in the canary lane
        base_id = dockerutil.image_id(base) if base else ""
        tag = dockerutil.content_tag(stack.compose.directory, build_args, base_id)
        canary_build = ctx.lane == "canary" and not upstream
        if canary_build:
            # A floating build arg ("" = the suite's newest) hashes the same every week: build
            # afresh under a per-run tag, and remove that image again at teardown.
            tag = f"canary-{ctx.run_id}-{stack.name}"  # one per stack: each removes its own
        ports = {name: free_port() for name in stack.compose.ports}
        env = {**build_args, **{k: str(v) for k, v in ports.items()},
               registry.BACKENDS[stack.backend].image_tag_variable: tag}
        if base:
            env["BASE_IMAGE"] = base
        if upstream:
            env["UPSTREAM_IMAGE"] = upstream
        env.update(host_env or {})
        return StackInfo(
            provider="compose", project=project_name(stack, ctx),
            files=(str(compose_files.compose_file(stack)),
                   str(compose_files.override(stack, ctx, ctx.run_dir))),
            env=env, ports=ports, image=upstream or f"pytest-stacks/{stack.backend}:{tag}",
            remove_image=canary_build)

    def _serve(self, stack: Stack, ctx: RunContext, info: StackInfo
               ) -> tuple[str, dict[str, str]]:
        """Wait for the backend's own readiness answer, then prepare the run (tokens, the
        route). Returns the service container's id and the endpoints users reach it by."""
        container = self._service_container(stack, info)
        transport = DockerExecTransport(container)
        adapter = stack_adapter(stack)
        try:
            with progress.step("waiting for the daemons' readiness"):
                adapter.wait_ready(transport, stack.timeouts.ready)
        except (TimeoutError, BackendCallError) as exc:  # the latter: its container died
            waited = f" after {stack.timeouts.ready:.0f}s" * isinstance(exc, TimeoutError)
            raise InfrastructureError(stack.name, f"daemons not ready{waited}: {exc}"
                                      + self._stopped_services(info),
                                      self._logs(stack, info, transport)) from None
        endpoints = adapter.prepare(stack, transport, ctx.run_dir, info.ports)
        services = {c.labels.get("com.docker.compose.service", ""): DockerExecTransport(c)
                    for c in self._containers(info)}
        try:
            object_store.wait_ready(stack, services, stack.timeouts.ready)
            oci.install(stack, container, ctx.labels(stack.name), stack.timeouts.ready)
            apptainer.install(stack, container, ctx.labels(stack.name), stack.timeouts.ready)
            endpoints.update(access_for(stack).endpoints(stack, ctx, info, services))
            endpoints.update(shared_folder.endpoints(stack, ctx.run_dir))
        except StacksError as exc:
            message = exc.message if isinstance(exc, InfrastructureError) else str(exc)
            raise InfrastructureError(stack.name, message, self._compose_logs(info)) from None
        return str(container.id), endpoints

    def _stopped_services(self, info: StackInfo) -> str:
        """Its stopped containers, for the readiness error (else it reads as a client fault)."""
        stopped = []
        for container in self._containers(info):
            if container.status != "running":
                state = container.attrs.get("State", {})
                stopped.append(f"{container.labels.get('com.docker.compose.service', '?')} "
                               f"{container.status} (exit code {state.get('ExitCode', '?')})")
        return f"\nnot running: {', '.join(sorted(stopped))}" if stopped else ""

    def _containers(self, info: StackInfo, service: str | None = None) -> list[Any]:
        labels = [f"com.docker.compose.project={info.project}"]
        if service:
            labels.append(f"com.docker.compose.service={service}")
        return list(dockerutil.client().containers.list(all=True, filters={"label": labels},
                                                          ignore_removed=True))

    def is_current(self, stack: Stack, info: StackInfo) -> bool:
        """Whether a running stack (kept by `pytest-stacks up`) was made from today's inputs:
        same upstream image, or the same content tag (stack folder, build args, base image)."""
        assert stack.compose is not None
        if stack.image is not None:
            return info.image == stack.image.reference
        if stack.base_image is None:
            return False
        for base in (stack.base_image.registry_reference, stack.base_image.seeded_reference):
            if dockerutil.image_exists(base):
                tag = dockerutil.content_tag(stack.compose.directory, _build_args(stack),
                                             dockerutil.image_id(base))
                return info.image == f"pytest-stacks/{stack.backend}:{tag}"
        return False

    def _build(self, stack: Stack, info: StackInfo) -> tuple[bool, float | None]:
        """Build the stack's image unless its content tag exists. Stacks that share an image
        (a cluster reached directly and through a jump host) come up at once: one builds
        under the image's lock, the others wait and find it built. Returns (built, seconds)."""
        if dockerutil.image_exists(info.image):
            return False, None  # content tag unchanged: nothing to rebuild
        with dockerutil.build_lock(info.image):
            if dockerutil.image_exists(info.image):
                return False, None  # built meanwhile by a stack sharing it
            return True, self._build_now(stack, info)

    def _build_now(self, stack: Stack, info: StackInfo) -> float:
        started = time.monotonic()
        extra = ["--no-cache"] if info.remove_image else []
        with progress.step(f"image build {info.image}"):
            result = dockerutil.run_cli([*self._base_cmd(info), "build", *extra],
                                        env=self._env(info), timeout=stack.timeouts.build)
        # Compose 2.40 with the classic builder of engine 20.10 exits 0 after a failed build
        # (seen here), so success is the image existing, not the exit code.
        if result.returncode != 0 or not dockerutil.image_exists(info.image):
            output = result.stdout + "\n" + result.stderr
            if gone := build_log.pin_gone(output):
                raise InfrastructureError(stack.name, f"image build refused: {gone}")
            raise InfrastructureError(
                stack.name, f"image build failed at step: {build_log.failed_step(output)}\n"
                f"last lines of the build log:\n{build_log.tail(output)}")
        return round(time.monotonic() - started, 1)

    def _service_container(self, stack: Stack, info: StackInfo) -> Any:
        assert stack.compose is not None
        found = dockerutil.client().containers.list(all=True, filters={"label": [
            f"com.docker.compose.project={info.project}",
            f"com.docker.compose.service={stack.compose.service}"]}, ignore_removed=True)
        if not found:
            raise InfrastructureError(stack.name, f"service {stack.compose.service!r} has no "
                                      f"container in project {info.project}",
                                      self._compose_logs(info))
        container = found[0]
        if container.status != "running":
            raise InfrastructureError(stack.name, f"container {container.name} is "
                                      f"{container.status}", self._compose_logs(info))
        return container

    def _compose_logs(self, info: StackInfo) -> str:
        logs = dockerutil.run_cli([*self._base_cmd(info), "logs", "--no-color", "--tail", "100"],
                                  env=self._env(info), timeout=60)
        return logs.stdout + logs.stderr

    def _logs(self, stack: Stack, info: StackInfo, transport: DockerExecTransport) -> str:
        parts = [f"== docker compose logs ({info.project})\n{self._compose_logs(info)}"]
        try:
            parts.append(stack_adapter(stack).daemon_logs(transport))
        except Exception as exc:  # the container may be gone; say so rather than fail
            parts.append(f"(daemon logs unavailable: {exc})")
        return "\n".join(parts)

    def attach(self, stack: Stack, info: StackInfo, ctx: RunContext) -> Attached:
        try:
            container = dockerutil.client().containers.get(info.container)
        except Exception as exc:
            raise InfrastructureError(stack.name, f"stack container is gone: {exc}") from None
        transport = DockerExecTransport(container)
        # The client goes the way the stack's users go (ssh: login node, jump hosts); logs and
        # readiness keep the engine's own channel, which still works when a hop is down.
        remote = access_for(stack).transport(info.endpoints)
        client = stack_adapter(stack).client(stack, remote or transport, info.endpoints,
                                             ctx.run_dir)

        def close() -> None:
            client.close()
            closing = getattr(remote, "close", None)
            if closing is not None:
                closing()
        return Attached(client, info, lambda: self._logs(stack, info, transport), close)

    def down(self, stack: Stack, info: StackInfo, ctx: RunContext) -> None:
        result = dockerutil.run_cli(
            # Ephemeral daemons: no state worth a graceful shutdown, so no grace period at all
            # (SIGKILL at once: a second per container saved on every run).
            [*self._base_cmd(info), "down", "-v", "--remove-orphans", "--timeout", "0"],
            env=self._env(info), timeout=300)
        left = reaper.sweep_run(ctx.run_id, stack.name)
        if info.remove_image:
            removed = dockerutil.run_cli(["rmi", "-f", info.image], timeout=120)
            if removed.returncode != 0 and "No such image" not in removed.stderr:
                left.append(f"canary image {info.image}: {removed.stderr.strip()}")
        remaining = [r for r in reaper.inventory(ctx.run_id).values()
                     if any(c.labels.get(LABEL_STACK) == stack.name for c in r.containers)]
        if left or remaining:
            raise InfrastructureError(
                stack.name, "teardown could not remove everything: "
                + "; ".join(left or ["containers remain"])
                + (f"\ncompose down said: {build_log.tail(result.stderr)}"
                   if result.returncode else ""))

    def sweep_run(self, ctx: RunContext, keep: Collection[str] = ()) -> list[str]:
        return reaper.sweep_run(ctx.run_id, exclude=keep)

    def reach(self, stack: Stack, info: StackInfo) -> str:
        """The service container's shell; over ssh, the route users take; a kubeconfig."""
        assert stack.compose is not None
        ways = [f"docker exec -it {info.container[:12]} bash",
                access_for(stack).reach(info.endpoints)]
        if "kubeconfig" in info.endpoints:
            ways.append(f"KUBECONFIG={info.endpoints['kubeconfig']} kubectl get pods -A")
        return "; or ".join(w for w in ways if w)

    def health(self, stack: Stack, info: StackInfo) -> tuple[str, str]:
        """Whether the stack can still serve (:mod:`.stack_health`): its containers running,
        not paused, on their networks; its route answering; its backend's own liveness
        answer. The first fault found, with its logs or the daemon's words."""
        try:
            service = dockerutil.client().containers.get(info.container)
            containers = self._containers(info)
        except Exception as exc:
            return f"the stack's container is gone ({exc})", ""
        for container in containers:
            fault, logs = stack_health.container_fault(container)
            if fault:
                return fault, logs
        fault = stack_health.route_fault(access_for(stack).transport(info.endpoints))
        if fault:
            return fault, ""
        return stack_health.backend_fault(stack_adapter(stack),
                                          DockerExecTransport(service)), ""
