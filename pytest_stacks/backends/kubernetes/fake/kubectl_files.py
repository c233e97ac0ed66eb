"""The manifests the fake's ``kubectl apply -f`` / ``delete -f`` reads: files, folders (their
``.yaml``/``.yml``/``.json``, not recursive) and stdin (``-``), multi-document YAML and ``List``s,
on the client's machine as kubectl reads them; and each object's mapping to a kind the API
server serves and to its namespace, with kubectl's words for each refusal.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from pytest_stacks.backends.kubernetes.api import RESOURCES, Obj
from pytest_stacks.backends.kubernetes.fake.kubectl_args import Failed


def documents(name: str, stdin: str, cwd: str | None) -> list[tuple[str, Obj]]:
    """(source, object) of each object ``name`` holds (``-``: ``stdin``)."""
    if name.startswith(("http://", "https://")):
        raise Failed(f"error: the fake's kubectl reads local files and stdin only, not "
                     f"{name}")
    if name == "-":
        sources = [("STDIN", stdin)]
    else:
        path = Path(cwd or os.getcwd()) / name
        if not path.exists():
            raise Failed(f'error: the path "{name}" does not exist')
        files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".yaml", ".yml")
                       ) if path.is_dir() else [path]
        sources = [(str(p) if path.is_dir() else name, p.read_text()) for p in files]
    docs = []
    for source, text in sources:
        try:
            loaded = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}: " if mark is not None else ""
            raise Failed(f"error: error parsing {source}: error converting YAML to JSON: "
                         f"yaml: {where}{getattr(exc, 'problem', '') or exc}") from None
        for doc in loaded:
            items = doc.get("items") if isinstance(doc, dict) and \
                str(doc.get("kind", "")).endswith("List") else [doc]
            for item in items or []:
                if not isinstance(item, dict):
                    raise Failed(f"error: error parsing {source}: an object is a mapping "
                                 f"of fields, not {type(item).__name__}")
                docs.append((source, item))
    return docs

def mapped(source: str, obj: Obj, namespace: str, explicit: bool) -> Obj:
    """``obj`` checked as kubectl maps it, its namespace set (``explicit``: given by -n)."""
    missing = [f"{f} not set" for f in ("apiVersion", "kind") if not obj.get(f)]
    if missing:
        raise Failed(f'error: error validating "{source}": error validating data: '
                     f"[{', '.join(missing)}]; if you choose to ignore these errors, turn "
                     f"validation off with --validate=false")
    kind, version = str(obj["kind"]), str(obj["apiVersion"])
    m = obj.setdefault("metadata", {})
    if kind not in RESOURCES or RESOURCES[kind].api_version != version:
        raise Failed(f'error: resource mapping not found for name: "{m.get("name", "")}" '
                     f'namespace: "{m.get("namespace", "")}" from "{source}": no matches '
                     f'for kind "{kind}" in version "{version}"\nensure CRDs are '
                     f"installed first")
    if not RESOURCES[kind].namespaced:
        m.pop("namespace", None)
    elif explicit and m.get("namespace") and m["namespace"] != namespace:
        raise Failed(f'error: the namespace from the provided object "{m["namespace"]}" '
                     f'does not match the namespace "{namespace}". You must pass '
                     f"'--namespace={m['namespace']}' to perform this operation.")
    else:
        m["namespace"] = m.get("namespace") or namespace
    return obj
