"""Runs documentation blocks as a reader pastes them: each in a fresh ``__main__``, from the
repository's root, with only the extras its page states importable.

Run as ``python tests/doc_runner.py JOBS.json RESULTS.json`` (tests/doc_blocks.py does). A fresh
interpreter per block would cost a second or more each (importing tether, bm25s, mcp); instead this
one process imports tether's core and the heavy optional modules once, then ``os.fork()``s a child
per block. The trade-off: the child is a fresh interpreter *state for the block* — a new
``__main__`` module, its own cwd, its own ``sys.modules`` entries for everything the block imports
beyond what was pre-imported — but not a fresh process image: a block that depended on a
side effect of importing a pre-imported module (and did not import it) would pass here and fail
when pasted. The pre-imported modules are libraries, not tether's optional submodules, so that side
effect would have to be a library's.

Extras are enforced in the child: a ``sys.meta_path`` finder refuses any top-level module that
belongs to an installed distribution outside the closure of tether's core dependencies plus the
page's stated extras (``importlib.metadata``: ``packages_distributions()``, ``requires()`` with
markers and extras evaluated), and every such module already imported by this process is removed
from ``sys.modules`` first, so a pre-import cannot let a block bypass the finder.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.metadata as md
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
MARKER = "\x00-- the block itself --\x00"
TIMEOUT = 120  # seconds a block may run before its child is killed (SIGALRM)
# imported once here (those some block's extras allow), so a child whose page allows them reuses
# them instead of importing them again
PRELOAD = ("tether", "numpy", "bm25s", "tokenizers", "mcp", "httpx", "opentelemetry.sdk.trace",
           "pydantic", "yaml", "jsonschema")


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(roots: set[tuple[str, frozenset[str]]]) -> set[str]:
    """The distributions ``roots`` (name, extras) need, transitively, on this interpreter."""
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    todo = list(roots)
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            requirements = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        names.add(normal(name))
        for text in requirements:
            req = Requirement(text)
            if req.marker and not any(req.marker.evaluate({"extra": e})
                                      for e in (extras or frozenset({""}))):
                continue
            todo.append((normal(req.name), frozenset(req.extras)))
    return names


def allowed(extras: Sequence[str]) -> set[str]:
    """tether's core dependencies, plus those of ``extras`` (a "+name" is a distribution
    installed on its own, without its dependencies: ``pip install --no-deps name``)."""
    plain = {e for e in extras if not e.startswith("+")}
    alone = {normal(e[1:]) for e in extras if e.startswith("+")}
    return closure({("tether", frozenset({"", *plain}))}) | alone


def extras_providing(dists: list[str]) -> list[str]:
    """The extras of tether that would make one of ``dists`` importable: those that name one
    first, then those that bring one along, smallest first."""
    offered = md.metadata("tether").get_all("Provides-Extra") or []
    direct = set()
    for text in md.requires("tether") or []:
        req = Requirement(text)
        if normal(req.name) in dists and req.marker:
            direct |= {e for e in offered if req.marker.evaluate({"extra": e})}
    found = [(e not in direct, len(allowed([e])), e) for e in offered
             if set(dists) & allowed([e])]
    return [e for *_, e in sorted(found)]


class Refuse(importlib.abc.MetaPathFinder):
    """Refuses modules of installed distributions the page's extras do not bring."""

    def __init__(self, owners: Mapping[str, list[str]], permitted: set[str]) -> None:
        self.owners, self.permitted = owners, permitted
        self.refused: list[str] = []  # what it said, for when tether rewords the ImportError

    def forbidden(self, top: str) -> list[str]:
        """The distributions ``top`` belongs to, when none of them is permitted."""
        dists = {normal(d) for d in self.owners.get(top, ())}
        return [] if not dists or dists & self.permitted else sorted(dists)

    def find_spec(self, fullname: str, path: Any, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        dists = self.forbidden(fullname.partition(".")[0])
        if not dists:
            return None
        dist = ", ".join(dists)
        extras = extras_providing(dists)
        if extras:
            said = (f"{fullname} (from {dist}) needs the {extras[0]} extra, which the page does "
                    f"not state: add a line `> **Extras:** ... pip install -e '.[{extras[0]}]'` "
                    f"above this block")
        else:
            said = (f"{fullname} (from {dist}) is no dependency of tether or of any of its "
                    f"extras: a reader would not have it")
        self.refused.append(said)
        raise ModuleNotFoundError(said, name=fullname)


def job_dir() -> str:
    """A directory that looks like the repository's root (its entries linked) but takes the
    files a block writes (tether.db, siem.jsonl), so runs leave the checkout as they found it."""
    where = tempfile.mkdtemp(prefix="doc-block-")
    for entry in ROOT.iterdir():
        if entry.name not in (".git",):
            os.symlink(entry, os.path.join(where, entry.name))
    return where


def child(job: dict[str, Any], cwd: str, out: int, err: int,
          owners: Mapping[str, list[str]]) -> None:
    """Runs in the forked child: never returns."""
    rc = 1
    finder = Refuse(owners, set())
    try:
        signal.alarm(TIMEOUT)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.chdir(cwd)
        permitted = allowed(job["extras"])
        finder = Refuse(owners, permitted)
        for name in list(sys.modules):
            if finder.forbidden(name.partition(".")[0]):
                del sys.modules[name]
        sys.meta_path.insert(0, finder)
        sys.path[0] = ""  # as `python` started in the repository's root has it
        sys.path[1:1] = [os.path.join(cwd, p) for p in job["paths"]]
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        sys.argv = [""]
        sources = job["sources"]
        for n, (filename, code) in enumerate(sources):
            if n == len(sources) - 1:
                print(MARKER, flush=True)
            exec(compile(code, filename, "exec", dont_inherit=True), main.__dict__)
        rc = 0
    except BaseException:  # whatever the block raised, the child reports
        traceback.print_exc()
        for said in finder.refused:  # tether may have reworded it (MissingExtra)
            print(f"the runner refused an import: {said}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)


def run_one(job: dict[str, Any], owners: Mapping[str, list[str]]) -> dict[str, Any]:
    cwd = job_dir()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            child(job, cwd, out.fileno(), err.fileno(), owners)
        _, status = os.waitpid(pid, 0)
        seconds = time.perf_counter() - started
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode(errors="replace"))
    if not job.get("keep"):
        shutil.rmtree(cwd, ignore_errors=True)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
        texts[1] += f"\nthe block ran past {TIMEOUT} s and was killed: does it wait on something?"
    before, _, own = texts[0].rpartition(MARKER + "\n")
    return {"id": job["id"], "cwd": cwd, "rc": os.waitstatus_to_exitcode(status), "stdout": own,
            "earlier_stdout": before, "stderr": texts[1], "seconds": seconds}


def preload(jobs: list[dict[str, Any]]) -> None:
    owners = md.packages_distributions()
    permitted = set().union(*(allowed(job["extras"]) for job in jobs))
    for name in PRELOAD:
        dists = {normal(d) for d in owners.get(name.partition(".")[0], ())}
        if dists & permitted or name == "tether":
            with contextlib.suppress(ImportError):  # else a block needing it fails, saying so
                __import__(name)


if __name__ == "__main__":
    started = time.perf_counter()
    todo = json.loads(Path(sys.argv[1]).read_text())
    preload(todo)
    loaded = time.perf_counter() - started
    owners = md.packages_distributions()
    done = [run_one(job, owners) for job in todo]
    Path(sys.argv[2]).write_text(json.dumps({"preload_seconds": loaded, "results": done}))
