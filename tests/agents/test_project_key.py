"""The project key of a working directory, read from .git/config without git."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd_client.agents.project import normalize_remote, project_key


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/App.git",
        "https://github.com/acme/app",
        "https://user@GitHub.com/acme/app.git/",
        "ssh://git@github.com:22/acme/app.git",
        "github.com:acme/app",
    ],
)
def test_remotes_of_one_repository_normalise_to_one_key(url: str) -> None:
    assert normalize_remote(url) == "github.com/acme/app"


def _repo(root: Path, origin: str | None) -> Path:
    (root / ".git").mkdir(parents=True)
    config = "[core]\n\tbare = false\n"
    if origin:
        config += (
            f'[remote "origin"]\n\turl = {origin}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
        )
    (root / ".git" / "config").write_text(config)
    return root


def test_a_subfolder_of_a_clone_is_keyed_by_its_origin(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "app", "git@github.com:acme/app.git")
    (repo / "src" / "deep").mkdir(parents=True)
    assert project_key(repo / "src" / "deep") == "github.com/acme/app"


def test_a_worktree_shares_the_key_of_its_repository(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "app", "https://github.com/acme/app.git")
    gitdir = repo / ".git" / "worktrees" / "feature"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    wt = tmp_path / "feature"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {gitdir}\n")
    assert project_key(wt) == "github.com/acme/app"


def test_a_repository_without_origin_is_keyed_by_its_root_and_no_repository_by_none(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "local", None)
    (repo / "x").mkdir()
    assert project_key(repo / "x") == str(repo.resolve())
    assert project_key(None) is None
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_key(plain) in (None, project_key(tmp_path))  # whatever holds tmp_path
