"""Installs that work on a fresh machine (issue 17 item 3). The cluster launchers are rendered the way `ray up`
prepares them (Ray's own `prepare_config`: defaults filled in, `setup_commands` merged into the head's and
the workers' commands) and every `pip install` a node would run is checked: zyx_dist comes from the copy of
the checkout that `file_mounts` sends, never from the package index by name (where the project is not
published and the name is open to squatting). The CUDA extras bring CuPy with its CUDA runtime wheels
(`[ctk]`) and NCCL, and what the code tells a user without CuPy names the same extras as the README."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from zyx_dist.runtime import cuda

ROOT = Path(__file__).resolve().parents[2]
LAUNCHERS = sorted((ROOT / "cluster").glob("launcher-*.yaml"))
LOCAL = ("/", "~", "$HOME", ".")  # how a local path starts in a shell command
# `pip install` options that take a value (the value is no requirement, except for -e)
_VALUED = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
           "--find-links", "-t", "--target", "--prefix", "--root", "--python-version", "--platform"}


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def pip_requirements(command: str) -> list[str]:
    """The requirements of every `pip install` in a shell command line (a `-e` path counts as one)."""
    out = []
    for part in re.split(r"&&|\|\||;", command):
        words = shlex.split(part)
        for i, w in enumerate(words[:-1]):
            if (w == "pip" or w.endswith(("/pip", "pip3"))) and words[i + 1] == "install":
                args, j = words[i + 2:], 0
                while j < len(args):
                    a = args[j]
                    if a in ("-e", "--editable"):
                        out.append(args[j + 1])
                        j += 2
                    elif a in _VALUED:
                        j += 2
                    elif a.startswith("-"):
                        j += 1
                    else:
                        out.append(a)
                        j += 1
    return out


def _is_us(requirement: str) -> bool:
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    return bool(name) and re.sub(r"[-_.]+", "-", name.group(0)).lower() == "zyx-dist"


def test_requirement_parsing():
    assert pip_requirements('python3 -m pip install -U pip') == ["pip"]
    assert pip_requirements('cd x && ~/v/bin/pip install -e "$HOME/zyx_dist[cuda12,cluster]" numpy') == [
        "$HOME/zyx_dist[cuda12,cluster]", "numpy"]
    assert pip_requirements("pip install -r req.txt 'zyx_dist[cuda]'") == ["zyx_dist[cuda]"]
    assert _is_us("zyx_dist[cuda]") and _is_us("Zyx-Dist>=0.1") and not _is_us("./zyx_dist")


@pytest.mark.parametrize("path", LAUNCHERS, ids=lambda p: p.name)
def test_launcher_nodes_install_the_checkout_never_the_index(path):
    from ray.autoscaler._private.util import prepare_config, validate_config

    cfg = prepare_config(yaml.safe_load(path.read_text()))  # what `ray up` works from
    validate_config(cfg)
    extras = set(_pyproject()["project"]["optional-dependencies"])
    mounts = {remote.replace("$HOME", "~").rstrip("/"): local for remote, local in cfg["file_mounts"].items()}
    for role in ("head", "worker"):
        commands = cfg["initialization_commands"] + cfg[f"{role}_setup_commands"]
        reqs = [r for c in commands for r in pip_requirements(c)]
        assert not [r for r in reqs if _is_us(r)], f"{role} installs zyx_dist from the index by name: {reqs}"
        ours = [r for r in reqs if r.startswith(LOCAL)]
        assert ours, f"{role} never installs the project: {commands}"
        for req in ours:
            where, _, wanted = req.partition("[")
            where = where.replace("$HOME", "~").rstrip("/")
            assert where in mounts, f"{req} is not a path file_mounts fills (mounts: {list(mounts)})"
            local = (ROOT / mounts[where]).resolve()  # `ray up` runs in the checkout's root
            assert local == ROOT and (local / "pyproject.toml").is_file()
            assert set(wanted.rstrip("]").split(",")) <= extras, f"{req}: unknown extras"
    excluded = set(cfg.get("rsync_exclude") or [])
    assert {".git", ".venv"} <= excluded  # the checkout is sent without its history and environments


def test_no_doc_or_config_installs_zyx_dist_by_name():
    """Every place that tells someone what to install names a local path (`-e .`) or a built wheel."""
    texts = [ROOT / "README.md", ROOT / "DEVELOPERS.md", *(ROOT / "cluster").glob("*"), *(ROOT / "configs").glob("*"),
             *(ROOT / "zyx_dist").rglob("*.py"), *(ROOT / "examples").glob("*.py"), *(ROOT / "tests").rglob("*.py")]
    by_name = re.compile(r"pip3? install [^\n`]*?(?<![\w./~$-])['\"]?zyx[-_]dist(\[[^\]]*\])?['\"]?(?=[\s`'\"]|$)")
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in texts if p.is_file() and p != Path(__file__).resolve()
             for m in by_name.finditer(p.read_text(errors="replace"))]
    assert not found, found


def test_cuda_extras_bring_cupy_with_its_runtime_and_nccl():
    deps = _pyproject()["project"]["optional-dependencies"]
    for extra, cuda_major in (("cuda12", 12), ("cuda13", 13), ("cuda", 12)):
        reqs = deps[extra]
        assert any(r.startswith(f"cupy-cuda{cuda_major}x[ctk]") for r in reqs), reqs
        assert any(r.startswith(f"nvidia-nccl-cu{cuda_major}") for r in reqs), reqs


def test_one_message_for_a_missing_cupy():
    hint = cuda.CUPY_INSTALL_HINT
    readme = (ROOT / "README.md").read_text()
    for piece in ("cupy-cuda12x[ctk]", "cupy-cuda13x[ctk]", "nvidia-nccl-cu12", "nvidia-nccl-cu13", "'.[cuda12]'",
                  "'.[cuda13]'"):
        assert piece in hint and piece in readme, piece
    if cuda.cp is None:  # what a user without CuPy sees when a CUDA device is asked for
        with pytest.raises(Exception, match=re.escape("cupy is not installed: " + hint)):
            cuda._require_cupy("cuda:0")


def test_ray_floor_is_what_the_code_and_docs_need():
    """ActorUnavailableError/ActorDiedError (which recover() tells apart) came in Ray 2.11, token auth
    (RAY_AUTH_MODE=token, which every cluster doc and launcher turns on) in 2.52."""
    import ray

    project = _pyproject()["project"]
    floors = [r for r in project["dependencies"] + [d for ds in project["optional-dependencies"].values() for d in ds]
              if re.match(r"ray(\[[^\]]*\])?\s*[<>=]", r)]
    assert floors and all(r.endswith(">=2.52") for r in floors), floors
    assert issubclass(ray.exceptions.ActorUnavailableError, ray.exceptions.RayActorError)
    assert issubclass(ray.exceptions.ActorDiedError, ray.exceptions.RayActorError)
    assert "RAY_AUTH_MODE=token" in (ROOT / "cluster" / "README.md").read_text()
