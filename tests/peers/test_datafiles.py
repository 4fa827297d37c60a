"""Files that hold cluster data: 0600, never written through a link, never taken from another user, replaced whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubelet_dra.peers.datafiles import check_replaceable, open_private, private_dir, refusal, replace_file


def mode(path: Path) -> int:
    return path.lstat().st_mode & 0o777


def test_a_new_file_is_0600_in_a_0700_dir_and_a_wider_file_of_ours_is_narrowed(tmp_path: Path) -> None:
    directory = private_dir(tmp_path / "data")
    os.close(open_private(directory / "new"))
    wide = directory / "wide"
    wide.write_text("ours\n")
    wide.chmod(0o644)
    os.close(open_private(wide))
    assert (mode(directory), mode(directory / "new"), mode(wide)) == (0o700, 0o600, 0o600)
    assert wide.read_text() == "ours\n", "appending opens, never truncates"


def test_a_link_is_not_followed_and_its_target_is_left_alone(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.write_text("theirs\n")
    theirs.chmod(0o644)
    link = tmp_path / "calls.jsonl"
    link.symlink_to(theirs)
    with pytest.raises(OSError) as refused:
        open_private(link)
    assert refusal(refused.value) == "it is a symbolic link, which is not followed"
    replace_file(link, b"ours\n")
    assert (theirs.read_text(), mode(theirs)) == ("theirs\n", 0o644), "the rename replaced the link itself"
    assert (link.is_symlink(), link.read_text(), mode(link)) == (False, "ours\n", 0o600)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user takes root")
def test_another_user_s_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.write_text("theirs\n")
    os.chown(theirs, 65534, 65534)
    for attempt in (lambda: open_private(theirs), lambda: check_replaceable(theirs)):
        with pytest.raises(OSError) as refused:
            attempt()
        assert refusal(refused.value) == "the file belongs to another user"
    assert theirs.read_text() == "theirs\n"


def test_a_replacement_that_fails_leaves_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    occupied = tmp_path / "report.xml"
    occupied.mkdir()
    (occupied / "inside").write_text("kept\n")
    with pytest.raises(OSError):
        replace_file(occupied, b"new")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["report.xml"]
    assert (occupied / "inside").read_text() == "kept\n"
    with pytest.raises(FileNotFoundError):
        check_replaceable(tmp_path / "missing" / "file")
