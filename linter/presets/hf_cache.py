"""A model's ``config.json`` from the local Hugging Face cache, by Hub id, without any download.

Training configs name their model by Hub id (``model_name_or_path: Qwen/Qwen3-4B``,
``--tokenizer-model meta-llama/Llama-3.1-8B``). On a machine that has used the model, the hub
library has left its files in the cache: ``<cache>/models--<org>--<name>/snapshots/<commit>/``,
with ``refs/main`` naming the commit the default revision points at. Reading that ``config.json``
gives the exact architecture of the model the run trains, where trainlint's presets may not know
it. Only files are read (JSON, never code); nothing is fetched, so on a machine without the cache
the answer is None and the estimate says which model it still needs.

The cache folder is the one ``huggingface_hub`` uses: ``HF_HUB_CACHE``, else ``HF_HOME/hub``,
else ``XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub`` (plus the older
``TRANSFORMERS_CACHE`` and ``HUGGINGFACE_HUB_CACHE``, which still point at the same layout).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

# A Hub repository id: "org/name" or a bare "name" (legacy canonical models such as "gpt2"),
# letters, digits, '-', '_', '.'; never a path (no "..", no leading '/' or '.').
_REPO_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_MAX_CONFIG_BYTES = 4 * 1024 * 1024


def is_repo_id(name: str) -> bool:
    """Whether ``name`` is spelled as a Hub repository id (not a path)."""
    return bool(_REPO_ID.match(name)) and ".." not in name


def cache_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders the hub library would keep its cache in, most specific first."""
    env = os.environ if env is None else env
    found: list[Path] = []
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
        if env.get(key):
            found.append(Path(env[key]).expanduser())
    if env.get("HF_HOME"):
        found.append(Path(env["HF_HOME"]).expanduser() / "hub")
    xdg = env.get("XDG_CACHE_HOME")
    found.append((Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface" / "hub")
    return list(dict.fromkeys(found))


def cached_file(repo_id: str, filename: str = "config.json",
                env: Mapping[str, str] | None = None) -> Path | None:
    """The cached ``filename`` of the model ``repo_id`` at its default revision, if on disk.

    The snapshot ``refs/main`` names wins; without it (a cache filled by revision), the only
    snapshot holding the file, or else none (two revisions: which one the run uses is not known)."""
    repo_id = repo_id.strip().strip("/")
    if not is_repo_id(repo_id):
        return None
    folder_name = "models--" + repo_id.replace("/", "--")
    for cache in cache_dirs(env):
        repo = cache / folder_name
        try:
            if not repo.is_dir():
                continue
            ref = repo / "refs" / "main"
            if ref.is_file():
                from trainlint.files.sources import read_bounded

                commit = read_bounded(ref, 4096).decode("utf-8", errors="replace").strip()
                if _COMMIT.match(commit):
                    candidate = repo / "snapshots" / commit / filename
                    if _small_file(candidate):
                        return candidate
            holding = [s / filename for s in (repo / "snapshots").iterdir() if _small_file(s / filename)] \
                if (repo / "snapshots").is_dir() else []
            if len(holding) == 1:
                return holding[0]
        except OSError:
            continue
    return None


def _small_file(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size <= _MAX_CONFIG_BYTES
    except OSError:
        return False
