"""scripts/setup.sh: what it installs for the dashboard and for the tests, and when it skips pip (the stamp).

The script runs on a copy of the project (scripts/setup.sh and pyproject.toml in a temporary folder) against a fake
environment whose ``bin/python`` only records its arguments, so nothing is installed and no network is used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not found")


@pytest.fixture()
def project(tmp_path):
    """A copy of the set-up script and pyproject.toml, and a fake environment that logs its python calls."""
    proj = tmp_path / "proj"
    (proj / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", proj / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", proj / "pyproject.toml")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake = venv / "bin" / "python"
    fake.write_text(f'#!/bin/sh\necho "$@" >> "{venv}/calls.log"\n')
    fake.chmod(0o755)
    return proj, venv


def run_setup(proj: Path, venv: Path, mode: str | None, *, dry: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "FABRIC_VENV": str(venv), "PYTHON": sys.executable}
    env.pop("FABRIC_SETUP_DRY_RUN", None)
    if dry:
        env["FABRIC_SETUP_DRY_RUN"] = "1"
    args = ["bash", str(proj / "scripts" / "setup.sh")] + ([mode] if mode else [])
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)


def pip_calls(venv: Path) -> list[str]:
    log = venv / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [ln for ln in lines if ln.startswith("-m pip install")]


def stamp(venv: Path) -> dict:
    return dict(ln.split("=", 1) for ln in (venv / ".fabric-setup").read_text().splitlines())


def test_dashboard_installs_only_the_base_dependencies_then_skips_pip(project):
    proj, venv = project
    r = run_setup(proj, venv, "dashboard")
    assert r.returncode == 0, r.stderr
    assert pip_calls(venv) == ["-m pip install --quiet --upgrade pip", "-m pip install --quiet -e ."]
    s = stamp(venv)
    assert s["extras"] == "" and s["project"] == str(proj.resolve())
    assert len(s["pyproject_sha256"]) == 64
    # second start: nothing to do, pip is not run at all
    r = run_setup(proj, venv, "dashboard")
    assert r.returncode == 0, r.stderr
    assert len(pip_calls(venv)) == 2
    assert r.stdout == ""
    r = run_setup(proj, venv, "dashboard", dry=True)
    assert "pip skipped" in r.stdout and "would run" not in r.stdout


def test_default_mode_is_the_dashboard(project):
    proj, venv = project
    r = run_setup(proj, venv, None)
    assert r.returncode == 0, r.stderr
    assert pip_calls(venv)[-1] == "-m pip install --quiet -e ."


def test_tests_add_their_extras_once_and_cover_the_dashboard(project):
    proj, venv = project
    assert run_setup(proj, venv, "dashboard").returncode == 0
    r = run_setup(proj, venv, "test")
    assert r.returncode == 0, r.stderr
    assert pip_calls(venv)[-1] == "-m pip install --quiet -e .[packet,test]"
    assert "extras [packet,test] not installed yet" in r.stdout
    assert stamp(venv)["extras"] == "packet,test"
    n = len(pip_calls(venv))
    for mode in ("test", "dashboard"):            # the full environment serves both
        assert run_setup(proj, venv, mode).returncode == 0
    assert len(pip_calls(venv)) == n


def test_a_changed_pyproject_reinstalls(project):
    proj, venv = project
    assert run_setup(proj, venv, "test").returncode == 0
    n = len(pip_calls(venv))
    with open(proj / "pyproject.toml", "a") as fh:
        fh.write("\n# a new dependency would go here\n")
    r = run_setup(proj, venv, "test", dry=True)
    assert "pyproject.toml changed" in r.stdout and "would run" in r.stdout
    assert len(pip_calls(venv)) == n                  # dry run: nothing ran
    r = run_setup(proj, venv, "test")
    assert r.returncode == 0, r.stderr
    assert pip_calls(venv)[-1] == "-m pip install --quiet -e .[packet,test]"
    assert run_setup(proj, venv, "test", dry=True).stdout.strip().endswith("pip skipped")


def test_an_environment_set_up_for_another_checkout_is_reinstalled(project, tmp_path):
    proj, venv = project
    assert run_setup(proj, venv, "dashboard").returncode == 0
    other = tmp_path / "other"
    shutil.copytree(proj, other)
    r = run_setup(other, venv, "dashboard", dry=True)
    assert f"the environment was set up for {proj.resolve()}" in r.stdout


def test_a_missing_environment_is_created_first(tmp_path, project):
    proj, _ = project
    venv = tmp_path / "nothing-here"
    r = run_setup(proj, venv, "test", dry=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("setup (test): would create") and "-m venv" in lines[0]
    assert "pip install --quiet -e .[packet,test]" in lines[-1] and "no stamp" in lines[-1]
    assert not venv.exists()


def test_a_failed_install_leaves_no_stamp(project):
    proj, venv = project
    (venv / "bin" / "python").write_text('#!/bin/sh\ncase "$*" in *"-e ."*) exit 1;; esac\nexit 0\n')
    r = run_setup(proj, venv, "dashboard")
    assert r.returncode != 0
    assert not (venv / ".fabric-setup").exists()


def test_unknown_mode_is_refused(project):
    proj, venv = project
    r = run_setup(proj, venv, "everything")
    assert r.returncode == 2 and "usage" in r.stderr


def test_the_two_commands_use_their_own_set_up():
    dash = (ROOT / "scripts" / "run_dashboard.sh").read_text()
    tests = (ROOT / "scripts" / "run_tests.sh").read_text()
    assert "bash scripts/setup.sh dashboard" in dash and "test" not in dash.split("setup.sh", 1)[1].split("\n")[0]
    assert "bash scripts/setup.sh test" in tests
    assert (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1] == "exec bash scripts/run_tests.sh"
