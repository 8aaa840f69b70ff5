"""The README's "Command line" block runs exactly as written, in order, in a clean clone after the set-up.

- a static check (fast): every file a line reads exists in the repository or is written (``--out``/``--plot``) by an
  earlier line;
- the real run (slow): ``git clone`` of this repository at HEAD into a temporary folder, ``.venv`` there a symlink
  to the environment running the tests (the set-up is done: run_tests.sh installed it), the clone's code first on
  ``PYTHONPATH``, and the block's lines in one bash shell that stops at the first failing line; then every output
  the block names must exist.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUTPUT_FLAGS = ("--out", "--plot")
_PATHLIKE = re.compile(r"/|\.(json|ya?ml|csv|log|gz|html|txt)$")


def command_block(readme: Path = ROOT / "README.md") -> list[str]:
    """The non-empty lines of the first ```bash block under "## Command line"."""
    text = readme.read_text(encoding="utf-8")
    section = re.search(r"^## Command line\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "README.md has no '## Command line' section"
    block = re.search(r"```bash\n(.*?)```", section.group(1), re.S)
    assert block, "the Command line section has no ```bash block"
    lines = [ln.rstrip() for ln in block.group(1).splitlines() if ln.strip()]
    assert not any(ln.endswith("\\") for ln in lines), "keep one command per line"
    return lines


def files_of(line: str) -> tuple[list[str], list[str]]:
    """(paths the line reads, paths it writes): words that look like paths; writes follow --out / --plot."""
    words = shlex.split(line, comments=True)
    reads, writes = [], []
    for i, w in enumerate(words):
        if w.startswith("-") or not _PATHLIKE.search(w) or "://" in w:
            continue
        (writes if i > 0 and words[i - 1] in OUTPUT_FLAGS else reads).append(w)
    return reads, writes


def unknown_files(lines: list[str], root: Path, *, extra: tuple[str, ...] = ()) -> list[str]:
    """Files a line reads that neither exist under ``root`` nor are written by an earlier line."""
    made: list[Path] = []
    bad = []
    for n, line in enumerate(lines, 1):
        reads, writes = files_of(line)
        for r in reads:
            p = Path(os.path.normpath(r))
            if r in extra:
                continue
            if any(ch in r for ch in "*?["):
                # a pattern matches files that exist, or files in a folder an earlier line wrote
                ok = bool(glob.glob(str(root / r))) or any(m in p.parents for m in made)
            else:
                ok = (root / p).exists() or any(p == m or m in p.parents for m in made)
            if not ok:
                bad.append(f"line {n}: {r}")
        made += [Path(os.path.normpath(w)) for w in writes]
    return bad


def test_static_check_sees_a_missing_file():
    lines = ["fabric build my_design.yaml --json", "fabric synth --preset x --out out/w.json",
             "fabric evaluate -w out/w.json -d fat-tree", "fabric evaluate -w out/x.json -d fat-tree",
             "fabric parse sample_traces/kineto/*.gz", "fabric parse nothing/*.gz",
             "fabric audit --write-synthetic --out out/run", "fabric audit out/run/*.json", "fabric audit out/r2/*.json"]
    assert unknown_files(lines, ROOT) == ["line 1: my_design.yaml", "line 4: out/x.json", "line 6: nothing/*.gz",
                                          "line 9: out/r2/*.json"]


def test_every_file_the_block_reads_exists_or_is_made_earlier():
    lines = command_block()
    assert lines[0].split("#")[0].strip() == "source .venv/bin/activate", "the block starts by putting fabric on PATH"
    assert all(ln.startswith("fabric ") for ln in lines[1:])
    # .venv is made by the set-up the README names before the block
    assert unknown_files(lines, ROOT, extra=(".venv/bin/activate",)) == []


def _head_commit() -> str:
    if shutil.which("git") is None:
        pytest.skip("git not found")
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "HEAD"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("the repository has no commits (or is not a git checkout)")
    return r.stdout.strip()


@pytest.mark.slow
def test_readme_command_block_runs_in_a_clean_clone(tmp_path):
    head = _head_commit()
    venv = Path(sys.prefix)
    if sys.prefix == sys.base_prefix or not (venv / "bin" / "activate").exists():
        pytest.skip("the tests do not run in a virtual environment (run them with bash scripts/run_tests.sh)")
    if not (venv / "bin" / "fabric").exists():
        pytest.skip(f"{venv} has no fabric command (pip install -e . was not run in it)")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", head], check=True)
    (clone / ".venv").symlink_to(venv, target_is_directory=True)   # the set-up is done: the environment running us

    lines = command_block(clone / "README.md")
    assert unknown_files(lines, clone) == []
    script = "\n".join([
        "set -e -o pipefail",
        'trap \'echo "README line failed with exit code $?: $BASH_COMMAND" >&2\' ERR',
        *lines,
        "",
    ])
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(clone)              # the clone's code, not the checkout the environment was built from
    env["MPLBACKEND"] = "Agg"
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import fabric; print(fabric.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(clone.resolve()), f"fabric is imported from {where}, not the clone"
    log = tmp_path / "block.log"
    with open(log, "wb") as fh:
        r = subprocess.run(["bash", "-c", script], cwd=clone, env=env, stdout=fh, stderr=subprocess.STDOUT,
                           timeout=1200)
    out = log.read_text(errors="replace")
    assert r.returncode == 0, f"exit code {r.returncode}; last output:\n{out[-4000:]}"
    outputs = [w for ln in lines for w in files_of(ln)[1]]
    assert outputs, "the block names no output files"
    missing = [o for o in outputs if not (clone / o).exists()]
    assert missing == [], f"outputs not written: {missing}"
    for name in ("evaluations.csv", "pareto.csv", "baselines.csv", "summary.json"):
        assert (clone / "out" / "limits" / name).exists()
    assert "packet level (ns-3)" in out               # the validate line ran the simulation
    assert "profile written to out/profile.json" in out
