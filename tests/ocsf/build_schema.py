"""Regenerate ``tests/ocsf/schema-1.8.0.json``: the OCSF 1.8.0 schema the OCSF tests validate
against, compiled by ocsf-lib from a checkout of github.com/ocsf/ocsf-schema at tag 1.8.0.

Why vendored: the tests run offline, and an OCSF event is only as right as the exact schema
version it claims (``metadata.version``), not a memory of it. Why trimmed: the whole compiled
schema is ~4 MB; tether emits six classes (API Activity and Detection Finding by default; ACS
Trace adds Authentication, Process Activity, Application Lifecycle and Datastore Activity), so
the file keeps those classes, the objects they reach, the types and the profiles, without
descriptions (captions stay: they name enum values). The schema is OCSF's, under the Apache
License 2.0 (``LICENSE`` beside it).

One correction on top of ocsf-lib's output: when a profile also adds an attribute the class (or
object) declares itself — ``host`` adds ``actor``, which API Activity requires anyway — the
compiled attribute carries the profile's name, which would make it look profile-only. Here an
attribute keeps a ``profile`` only when no definition in its class's (or object's) ``extends``
chain declares it directly, so a validator can gate exactly the profile-only attributes.

    git -C <ocsf-schema> archive 1.8.0 | tar -x -C /tmp/ocsf-1.8.0
    python tests/ocsf/build_schema.py /tmp/ocsf-1.8.0 tests/ocsf/schema-1.8.0.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ocsf.compile.compiler import Compilation
from ocsf.compile.options import CompilationOptions
from ocsf.repository import read_repo
from ocsf.schema import to_dict

CLASSES = ("api_activity", "detection_finding", "authentication", "process_activity",
           "application_lifecycle", "datastore_activity")


def _own(root: Path, kind: str, name: str) -> set[str]:
    """Attribute names the definition ``name`` and its ``extends`` chain declare directly."""
    names: set[str] = set()
    current: str | None = name
    while current and current != "object":
        found = [p for p in (root / kind).rglob(f"{current}.json")]
        if not found:
            break
        raw = json.loads(found[0].read_text())
        names |= {k for k in raw.get("attributes", {}) if not k.startswith("$")}
        current = raw.get("extends")
    return names


def _trim(attrs: dict[str, Any], own: set[str]) -> dict[str, Any]:
    out = {}
    for key, attr in attrs.items():
        attr = {k: v for k, v in attr.items() if k not in ("description", "references")
                and v is not None}
        if key in own:
            attr.pop("profile", None)
        if "enum" in attr:
            attr["enum"] = {k: {"caption": v["caption"]} for k, v in attr["enum"].items()}
        out[key] = attr
    return out


def build(repo: Path) -> dict[str, Any]:
    options = CompilationOptions(ignore_extensions=["linux", "macos", "windows"],
                                 map_events_to_categories=False)
    schema = to_dict(Compilation(read_repo(repo), options).build())
    if schema["version"] != "1.8.0":
        sys.exit(f"{repo} is OCSF {schema['version']}; check out tag 1.8.0")
    classes = {}
    for name in CLASSES:
        cls = schema["classes"][name]
        classes[name] = {"caption": cls["caption"], "name": name, "uid": cls["uid"],
                         "category": cls["category"], "profiles": sorted(cls["profiles"]),
                         "attributes": _trim(cls["attributes"], _own(repo, "events", name))}
    objects: dict[str, Any] = {}
    def refs(attrs: dict[str, Any]) -> list[str]:
        return [a.get("object_type") or a["type"] for a in attrs.values()
                if (a.get("object_type") or a["type"]) in schema["objects"]]

    todo = [name for c in classes.values() for name in refs(c["attributes"])]
    while todo:
        name = todo.pop()
        if name in objects:
            continue
        obj = schema["objects"][name]
        objects[name] = {"caption": obj["caption"], "name": name,
                         "attributes": _trim(obj["attributes"], _own(repo, "objects", name))}
        if obj.get("constraints"):
            objects[name]["constraints"] = obj["constraints"]
        todo += refs(obj["attributes"])
    types = {k: {kk: vv for kk, vv in v.items() if kk != "description" and vv is not None}
             for k, v in schema["types"].items()}
    profiles = {k: {"caption": v["caption"], "name": k, "attributes": {}}
                for k, v in schema["profiles"].items()}
    return {"version": schema["version"], "classes": classes, "objects": objects,
            "types": types, "profiles": profiles}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    Path(sys.argv[2]).write_text(json.dumps(build(Path(sys.argv[1])), sort_keys=True,
                                            separators=(",", ":")) + "\n")
