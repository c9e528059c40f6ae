"""Content hashes and read-only snapshots."""

import os

from capevolve._engine.materialize import unpack
from capevolve._store.candidates import content_hash, copy_readonly, pack


def _tree(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_hash_depends_on_paths_and_bytes_only(tmp_path):
    """Equal trees hash equal; a byte or a rename changes the hash; caches are ignored."""
    a = _tree(tmp_path / "a", {"p.md": "x", "tools/t.py": "y"})
    b = _tree(tmp_path / "b", {"tools/t.py": "y", "p.md": "x", "__pycache__/z.pyc": "junk"})
    assert content_hash(a) == content_hash(b)
    c = _tree(tmp_path / "c", {"p.md": "x!", "tools/t.py": "y"})
    d = _tree(tmp_path / "d", {"q.md": "x", "tools/t.py": "y"})
    assert len({content_hash(a), content_hash(c), content_hash(d)}) == 3


def test_snapshot_is_read_only_and_packs_round_trip(tmp_path):
    """copy_readonly makes files read-only; pack/unpack reproduces the tree."""
    src = _tree(tmp_path / "src", {"p.md": "x", "tools/t.py": "y"})
    copy_readonly(src, tmp_path / "snap")
    assert not os.access(tmp_path / "snap" / "p.md", os.W_OK) or os.geteuid() == 0
    assert oct((tmp_path / "snap" / "p.md").stat().st_mode & 0o777) == "0o444"
    out = unpack(pack(src), tmp_path / "out")
    assert content_hash(out) == content_hash(src)

