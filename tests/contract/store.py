"""The stack's object store as the tests see it: through Docker, on the store's own disk and
in its access log, never through the client under test (which has no route and no keys)."""

from __future__ import annotations

import re
import subprocess
import uuid
from dataclasses import dataclass
from typing import Any

from pytest_stacks.manifest import Stack
from pytest_stacks.providers import object_store

from .nodes import node_containers, on_node

#: versitygw's access log line: bucket owner, bucket, [time], client address, requester,
#: request id, operation, key, request path, status, error code, ...
_LINE = re.compile(r"^\S+ (?P<bucket>\S+) \[[^\]]+\] (?P<client>\S+) \S+ \S+ "
                   r"(?P<operation>s3_\w+) (?P<key>\S+) (?P<path>\S+) (?P<status>\d{3}) ")


@dataclass(frozen=True)
class Request:
    client: str
    operation: str
    key: str
    status: int


@dataclass(frozen=True)
class Store:
    container: str
    nodes: tuple[str, ...]  # the batch nodes' containers

    @classmethod
    def of(cls, stack: Stack, info: dict[str, Any]) -> Store:
        containers = node_containers(stack, info)
        services = {c: _service(c) for c in containers}
        stores = [c for c, s in services.items() if s == object_store.SERVICE]
        assert len(stores) == 1, f"stack {stack.name} has no {object_store.SERVICE} service"
        return cls(stores[0], tuple(c for c in containers if c not in stores))

    @staticmethod
    def key(prefix: str) -> str:
        return f"{prefix}/{uuid.uuid4().hex}.bin"

    @staticmethod
    def url(key: str, bucket: str = object_store.BUCKET) -> str:
        return f"s3://{object_store.HOST}/{bucket}/{key}"

    @property
    def credentials(self) -> str:
        return f"{object_store.CREDENTIALS}/store"

    @property
    def unknown_credentials(self) -> str:
        """A key pair the store never accepted."""
        return f"{object_store.CREDENTIALS}/unknown"

    def _path(self, key: str) -> str:
        return f"{object_store.DATA}/{object_store.BUCKET}/{key}"

    def seed(self, key: str, data: bytes) -> None:
        """Put an object on the store's disk (its POSIX backend), as a site's data arrives:
        no S3 request, so the access log holds only what the job's side asked."""
        path = self._path(key)
        done = subprocess.run(["docker", "exec", "-i", self.container, "sh", "-c",
                               f"mkdir -p {path.rsplit('/', 1)[0]} && cat > {path}"],
                              input=data, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr.decode(errors="replace")

    def sha256(self, key: str) -> str | None:
        """The digest of the object as stored, or None where there is none."""
        done = on_node(self.container, f"sha256sum {self._path(key)}")
        return done.stdout.split()[0] if done.returncode == 0 else None

    def requests(self, key: str) -> list[Request]:
        log = on_node(self.container, f"cat {object_store.ACCESS_LOG}")
        assert log.returncode == 0, log.stderr
        found = (_LINE.match(line) for line in log.stdout.splitlines())
        return [Request(m["client"], m["operation"], m["key"], int(m["status"]))
                for m in found if m and m["key"] == key]

    def node_addresses(self) -> set[str]:
        """Every address the stack's batch nodes have on its networks."""
        found: set[str] = set()
        for node in self.nodes:
            done = subprocess.run(
                ["docker", "inspect", "-f",
                 "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", node],
                capture_output=True, text=True, timeout=30, check=True)
            found.update(done.stdout.split())
        return found


def _service(container: str) -> str:
    done = subprocess.run(["docker", "inspect", "-f",
                           '{{index .Config.Labels "com.docker.compose.service"}}', container],
                          capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.strip()
