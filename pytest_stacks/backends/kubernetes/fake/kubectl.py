"""``kubectl`` in front of the fake's in-process API server: what a client of MPIJobs that
shells out meets (``apply -f``, ``get``, ``delete``, ``wait``, ``logs``, ``version``), answered
through the ``KubeApi`` seam the driver uses, so an MPIJob applied here is the one the fake's
operator reconciles and its conditions are the operator's, read back as stored.

Reached as ``FakeCluster.commands`` (``stack_fake.commands`` on fake-mpi-operator; ``kubectl``
of ``stack_commands``). kubectl runs on the client's machine: files named with ``-f`` are read
there, relative to the caller's folder. Unknown commands and options get kubectl's own words
and exit 1; real ones the fake does not model are named as such (:mod:`.kubectl_args`). What it
does not do is in docs/your-own-client.md: watches, server-side apply, dry runs, patches,
``exec``/``describe``, and pod logs beyond what the API server holds (kwok pods have
none: ``logs`` prints nothing).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_stacks.backends.kubernetes.api import (
    RESOURCES,
    ApiError,
    KubeApi,
    Obj,
    meta,
)
from pytest_stacks.backends.kubernetes.fake import kubectl_print as show
from pytest_stacks.backends.kubernetes.fake.kubectl_args import (
    Failed,
    Parsed,
    kind_of,
    parse,
    plural,
    seconds,
    singular,
)
from pytest_stacks.backends.kubernetes.fake.kubectl_files import documents, mapped
from pytest_stacks.backends.kubernetes.fake.kubectl_logs import logs
from pytest_stacks.backends.kubernetes.fake.kubectl_version import usage, version
from pytest_stacks.backends.kubernetes.fake.kubectl_wait import wait
from pytest_stacks.errors import BackendCallError

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_CASCADE = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}
_NO_TARGET = ("error: You must provide one or more resources by argument or filename.\n"
              "Example resource specifications include:\n   '-f rsrc.yaml'\n"
              "   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'")


@dataclass(frozen=True)
class CommandResult:
    """One command's answer, in the shape of ``pytest_stacks.transports.CommandResult`` (what
    the relay and the other fakes' command lines return), kept here: the fake imports only the
    seam it models."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _server(exc: ApiError, doing: str = "") -> str:
    return f"Error from server ({exc.reason}): {doing}{exc.message}"


def _not_found(kind: str, name: str) -> str:
    return f'Error from server (NotFound): {plural(kind)} "{name}" not found'


class FakeKubectl:
    """``run(argv, user=, timeout=, stdin=, cwd=)`` for fake-mpi-operator; ``argv[0]`` is
    ``kubectl``."""

    def __init__(self, api: KubeApi, kubernetes_version: str, *,
                 mutate: Callable[[str, str | None, str, Callable[[Obj], None]], None] | None
                 = None, poll: float = 0.02) -> None:
        self.api = api
        self.kubernetes_version = kubernetes_version
        self._mutate = mutate
        self._poll = poll

    def run(self, argv: Sequence[str], *, user: str | None = None, timeout: float = 60.0,
            stdin: str = "", cwd: str | None = None) -> CommandResult:
        """One kubectl command line, answered as the pinned kubectl does against this API."""
        words = tuple(argv)
        out: list[str] = []
        try:
            parsed = parse(words[1:])
            if parsed.flag("help") or not parsed.command:
                out.append(usage(parsed.command))
                return CommandResult(words, 0, "".join(out), "")
            handler = getattr(self, f"_{parsed.command}")
            code, err = handler(parsed, out, stdin=stdin, cwd=cwd, timeout=timeout)
            return CommandResult(words, code, "".join(out), err)
        except Failed as failed:
            return CommandResult(words, failed.code, "".join(out), failed.stderr)
        except show.PrintError as exc:
            return CommandResult(words, 1, "".join(out), f"error: {exc}\n")
        except BackendCallError as exc:
            return CommandResult(words, 1, "".join(out),
                                 f"Unable to connect to the server: {exc}\n")
        except ApiError as exc:
            return CommandResult(words, 1, "".join(out), _server(exc) + "\n")
        except Exception as exc:  # fail closed, with words, never a traceback
            return CommandResult(words, 1, "".join(out), f"error: the fake's kubectl could not "
                                 f"answer ({type(exc).__name__}: {exc})\n")

    # ------------------------------------------------------------ shared pieces

    def _targets(self, parsed: Parsed) -> list[tuple[str, str]]:
        """(kind, name) pairs from ``TYPE NAME...`` or ``TYPE/NAME...``; name "" for none."""
        words = parsed.positionals
        if not words:
            return []
        if "/" in words[0]:
            pairs = []
            for word in words:
                kind, slash, name = word.partition("/")
                if not slash or not name:
                    raise Failed("error: there is no need to specify a resource type as a "
                                 "separate argument when passing arguments in resource/name "
                                 "form (e.g. 'kubectl get resource/<resource_name>' instead of "
                                 "'kubectl get resource resource/<resource_name>'")
                pairs.append((kind_of(kind), name))
            return pairs
        if "," in words[0]:
            raise Failed(f"error: the fake's kubectl takes one resource type at a time, not "
                         f"{words[0]!r}: run it once per type")
        kind = kind_of(words[0])
        return [(kind, name) for name in words[1:]] or [(kind, "")]

    def _resolve(self, parsed: Parsed, stdin: str, cwd: str | None
                 ) -> list[tuple[str, str | None, str]] | None:
        """(kind, namespace, name) of what ``delete``/``wait`` act on: names, ``-f`` files,
        ``-l``/``--all`` (None: a selector that matched nothing)."""
        pairs: list[tuple[str, str | None, str]] = []
        for name in parsed.options.get("filename", []):
            for source, obj in documents(name, stdin, cwd):
                obj = mapped(source, obj, parsed.namespace, "namespace" in parsed.options)
                pairs.append((obj["kind"], obj["metadata"].get("namespace"),
                              str(obj["metadata"].get("name", ""))))
        for kind, name in self._targets(parsed):
            ns = parsed.namespace if RESOURCES[kind].namespaced else None
            if name:
                pairs.append((kind, ns, name))
            elif parsed.options.get("selector") or parsed.flag("all"):
                pairs += [(kind, ns, meta(o)["name"])
                          for o in self.api.list(kind, ns, self._labels(parsed))]
                if not pairs:
                    return None
            else:
                raise Failed("error: resource(s) were provided, but no name was specified")
        if not pairs:
            raise Failed(_NO_TARGET)
        return pairs

    def _labels(self, parsed: Parsed) -> dict[str, str] | None:
        text = parsed.last("selector")
        if not text:
            return None
        labels = {}
        for term in text.split(","):
            key, eq, value = term.partition("=")
            if not eq or key.endswith("!") or " " in term or "(" in term:
                raise Failed(f"error: the fake's kubectl models equality selectors only "
                             f"(key=value,...), not {term!r}")
            labels[key.strip()] = value.removeprefix("=").strip()
        return labels

    def _print(self, objs: list[Obj], output: str, single: bool, kind: str,
               parsed: Parsed) -> str:
        shown: Any = objs[0] if single and len(objs) == 1 else show.as_list(objs)
        if output == "json":
            return show.as_json(shown)
        if output == "yaml":
            return show.as_yaml(shown)
        if output == "name":
            return "".join(f"{singular(kind)}/{meta(o)['name']}\n" for o in objs)
        if output.startswith("jsonpath="):
            return show.jsonpath(output.split("=", 1)[1], shown)
        if output == "jsonpath":
            raise Failed("error: template format specified but no template given")
        if output in ("", "wide"):
            return show.table(kind, objs, all_namespaces=parsed.flag("all-namespaces"),
                              no_headers=parsed.flag("no-headers"))
        raise Failed(f'error: unable to match a printer suitable for the output format '
                     f'"{output}", allowed formats are: json,jsonpath,name,wide,yaml (the '
                     f"fake's kubectl models these)")

    def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() >= deadline:
                return False
            time.sleep(self._poll)
        return True

    # ------------------------------------------------------------ get

    def _get(self, parsed: Parsed, out: list[str], **_: Any) -> tuple[int, str]:
        targets = self._targets(parsed)
        if not targets:
            raise Failed('You must specify the type of resource to get. Use "kubectl '
                         'api-resources" for a complete list of supported resources.\n\n'
                         "error: Required resource not specified.\nUse \"kubectl explain "
                         "<resource>\" for a detailed description of that resource (e.g. "
                         "kubectl explain pods).\nSee 'kubectl get -h' for help and examples")
        every = parsed.flag("all-namespaces")
        namespace = None if every else parsed.namespace
        output = parsed.last("output")
        kind = targets[0][0]
        errors: list[str] = []
        objs: list[Obj] = []
        named = bool(targets[0][1])
        if named and every:
            raise Failed("error: a resource cannot be retrieved by name across all namespaces")
        for tkind, name in targets:
            ns = namespace if RESOURCES[tkind].namespaced else None
            if not name:
                found = self.api.list(tkind, ns, self._labels(parsed))
                objs += sorted(found, key=lambda o: (meta(o).get("namespace", ""),
                                                     meta(o)["name"]))
                continue
            obj = self.api.get(tkind, ns, name)
            if obj is None and not parsed.flag("ignore-not-found"):
                errors.append(_not_found(tkind, name))
            elif obj is not None:
                objs.append(obj)
        err = "".join(f"{e}\n" for e in errors)
        if not objs and not named and output in ("", "wide"):
            where = "" if every or not RESOURCES[kind].namespaced else \
                f" in {namespace} namespace"
            return 0, f"No resources found{where}.\n"
        if objs or not named:  # names all missing: only the errors, as kubectl
            out.append(self._print(objs, output, named and len(targets) == 1, kind, parsed))
        return (1 if errors else 0), err

    # ------------------------------------------------------------ apply

    def _apply(self, parsed: Parsed, out: list[str], *, stdin: str, cwd: str | None,
               **_: Any) -> tuple[int, str]:
        files = parsed.options.get("filename")
        if not files:
            raise Failed("error: must specify one of -f and -k")
        explicit = "namespace" in parsed.options
        docs = [(source, mapped(source, obj, parsed.namespace, explicit))
                for name in files for source, obj in documents(name, stdin, cwd)]
        output = parsed.last("output")
        errors, done = [], []
        for source, obj in docs:
            kind, m = str(obj["kind"]), obj["metadata"]
            applied = copy.deepcopy(obj)
            applied["metadata"].get("annotations", {}).pop(LAST_APPLIED, None)
            record = show.compact_json(applied) + "\n"
            m.setdefault("annotations", {})[LAST_APPLIED] = record
            have: Obj | None = None
            try:
                have = self.api.get(kind, m.get("namespace"), str(m.get("name", "")))
                if have is None:
                    done.append(self.api.create(obj))
                    what = "created"
                elif (meta(have).get("annotations") or {}).get(LAST_APPLIED) == record:
                    done.append(have)
                    what = "unchanged"
                else:
                    done.append(self._configure(kind, have, obj))
                    what = "configured"
            except ApiError as exc:
                verb = "creating" if have is None else "patching"
                errors.append(_server(exc, f'error when {verb} "{source}": '))
                continue
            if not output:
                out.append(f"{singular(kind)}/{m['name']} {what}\n")
        if output and done:
            out.append(self._print(done, output, len(docs) == 1, str(docs[0][1]["kind"]),
                                   parsed))
        return (1 if errors else 0), "".join(f"{e}\n" for e in errors)

    def _configure(self, kind: str, have: Obj, new: Obj) -> Obj:
        """A changed object applied again: its fields replaced, its status kept."""
        if self._mutate is None:
            raise Failed(f"error: the fake's kubectl cannot change an existing {kind}: delete "
                         f"it first (kubectl delete {kind.lower()} {meta(have)['name']})")

        def change(stored: Obj) -> None:
            for key in [k for k in stored if k not in ("apiVersion", "kind", "metadata",
                                                       "status")]:
                del stored[key]
            stored.update({k: copy.deepcopy(v) for k, v in new.items()
                           if k not in ("metadata", "status")})
            for part in ("labels", "annotations"):
                stored["metadata"][part] = dict(new["metadata"].get(part) or {})

        m = meta(have)
        self._mutate(kind, m.get("namespace"), m["name"], change)
        return self.api.get(kind, m.get("namespace"), m["name"]) or have

    # ------------------------------------------------------------ delete

    def _delete(self, parsed: Parsed, out: list[str], *, stdin: str, cwd: str | None,
                timeout: float, **_: Any) -> tuple[int, str]:
        cascade = parsed.last("cascade", "background")
        if cascade not in _CASCADE:
            raise Failed(f'error: invalid cascade value ({cascade}). Must be "background", '
                         f'"foreground", or "orphan".')
        pairs = self._resolve(parsed, stdin, cwd)
        if pairs is None:
            return 0, "No resources found\n"
        errors, gone = [], []
        force = parsed.last("grace-period") == "0"
        for kind, ns, name in pairs:
            have = self.api.get(kind, ns, name)
            if have is None or not self.api.delete(kind, ns, name,
                                                   propagation=_CASCADE[cascade]):
                if not parsed.flag("ignore-not-found"):
                    errors.append(_not_found(kind, name))
                continue
            did = "force deleted" if force else "deleted"
            where = f" from {ns} namespace" if ns else ""
            out.append(f"{singular(kind)}/{name}\n" if parsed.last("output") == "name"
                       else f'{singular(kind)} "{name}" {did}{where}\n')
            gone.append((kind, ns, name, meta(have).get("uid")))
        if parsed.flag("wait", True):
            limit = seconds(parsed.last("timeout"), "timeout") if \
                parsed.last("timeout") not in ("", "0", "0s") else timeout
            for kind, ns, name, uid in gone:
                def absent(k: str = kind, n: str | None = ns, nm: str = name,
                           u: Any = uid) -> bool:
                    now = self.api.get(k, n, nm)
                    return now is None or meta(now).get("uid") != u
                if not self.wait_for(absent, limit):
                    errors.append(f"error: timed out waiting for the condition on "
                                  f"{RESOURCES[kind].plural}/{name}")
        return (1 if errors else 0), "".join(f"{e}\n" for e in errors)

    # ------------------------------------------------------------ logs and version

    def _logs(self, parsed: Parsed, out: list[str], **_: Any) -> tuple[int, str]:
        return logs(self.api, parsed)

    def _wait(self, parsed: Parsed, out: list[str], *, stdin: str, cwd: str | None,
              timeout: float, **_: Any) -> tuple[int, str]:
        pairs = self._resolve(parsed, stdin, cwd)
        if pairs is None:
            raise Failed("error: no matching resources found")
        return wait(self.api, pairs, parsed, out, wait_for=self.wait_for, timeout=timeout)

    def _version(self, parsed: Parsed, out: list[str], **_: Any) -> tuple[int, str]:
        return version(self.api, self.kubernetes_version, parsed, out)


__all__ = ["CommandResult", "FakeKubectl", "kind_of", "plural", "singular"]
