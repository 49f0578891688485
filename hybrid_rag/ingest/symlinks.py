"""Symbolic links met inside an ingested folder: followed or not (``loading.follow_symlinks``).

* ``no`` (the default): never followed, each skipped with its reason;
* ``inside``: followed when the target lies inside the ingested root (a file or a folder);
  a link leading out of the root is skipped, saying ``--follow-symlinks=outside`` follows it;
* ``outside``: followed wherever it leads (the explicit opt-in).

Whatever the policy, a link to a folder that encloses it (or to one being walked) is a loop,
refused with its reason, and a broken link is skipped. A target inside the root is read under its
real path (so a file reached twice, through a link and directly, is stored once); a target outside
is read under the link's path, below the root where the user put it.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from hybrid_rag.types import ConfigEnum


class FollowSymlinks(ConfigEnum):
    NO = "no"
    INSIDE = "inside"
    OUTSIDE = "outside"


def follow_link(
    link: Path, root: Path, walking: Collection[Path], policy: FollowSymlinks
) -> tuple[Path, Path] | str:
    """``(path to read it under, its real path)`` for a link to follow, else why it is skipped.
    ``walking``: the real paths of the folders being walked (the root and the link's ancestors)."""
    if policy is FollowSymlinks.NO:
        return "symbolic link (not followed; --follow-symlinks follows links inside the ingested root)"
    try:
        target = Path(os.path.realpath(link, strict=True))
    except (OSError, RuntimeError) as exc:  # a dangling link, or a chain of links that loops
        looped = isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == 40  # ELOOP
        return "symbolic link loop" if looped else "broken symbolic link (its target does not exist)"
    inside = target == root or root in target.parents
    if not inside and policy is FollowSymlinks.INSIDE:
        return (
            f"symbolic link to {target.as_posix()}, outside the ingested root "
            "(--follow-symlinks=outside follows it)"
        )
    if target.is_dir() and any(target == w or target in w.parents for w in walking):
        return f"symbolic link loop (to {target.as_posix()}, a folder being walked)"
    return (target if inside else link), target
