"""A judge's answers kept by what was asked, so asking the same again costs nothing.

A :class:`JudgeCache` lives in a folder (a local path or an fsspec URL) shared by every run and
every evaluation that names it (``--judge-cache DIR``). One answer is one JSON file,
``<key[:2]>/<key>.json``, where the key is the SHA-256 of the judge model and provider, its
settings, the system prompt, the prompt sent, the answer's type and a replica number
(:func:`cache_key`): the same question asked of the same judge under the same settings. A hit
is answered from the file with no request sent and priced $0; a miss is asked as before, priced
as before, and its answer written (atomically, so a killed writer leaves no half entry). An
entry that cannot be read as an answer is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from glossogen.storage import StorageError, join, open_fs, path_kind, write_bytes_atomic


def cache_key(
    model: str,
    provider: str,
    settings: dict[str, Any],
    system: str,
    prompt: list[str],
    output: str,
    replica: int = 0,
) -> str:
    """The SHA-256 (hex) of one judge question: who is asked, how, and what.

    Args:
        model: The judge model (``gpt-4.1-mini``).
        provider: Its provider (``openai``).
        settings: The pydantic-ai settings sent with the request.
        system: The judge's system prompt.
        prompt: The parts of the user prompt, in order.
        output: The name of the answer's type (``JudgeRuling``).
        replica: Which of several askings of one question (an evaluation's replicas).
    """
    asked = {
        "model": model,
        "provider": provider,
        "settings": settings,
        "system": system,
        "prompt": prompt,
        "output": output,
        "replica": replica,
    }
    text = json.dumps(asked, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class JudgeCache:
    """The answers kept under ``url``; counts its hits and misses since it was opened.

    Attributes:
        url: The cache folder (local path or fsspec URL).
        hits: Questions answered from the cache.
        misses: Questions that were not in it (asked of the judge).
        kept: Answers written (a miss the judge gave no usable answer to is not kept, so
            ``kept`` can be below ``misses``).
    """

    url: str
    hits: int = 0
    misses: int = 0
    kept: int = 0
    _seen: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, url: str) -> JudgeCache:
        """The cache at ``url``; the folder is made at the first answer written.

        Raises:
            ValueError: ``url`` names a file, not a folder.
            StorageError: the storage is unreachable.
        """
        if path_kind(url) == "file":
            raise ValueError(f"{url} is a file, not a folder")
        return cls(url)

    def _url(self, key: str) -> str:
        return join(self.url, key[:2], f"{key}.json")

    def get(
        self, key: str, accept: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, Any] | None:
        """The answer kept under ``key`` (its ``output`` as JSON), or None; counted.

        ``accept`` judges a kept ``output``: one it rejects (an answer the asker cannot use,
        e.g. kept by an older version) is a miss, asked again and overwritten.
        """
        entry = self._seen.get(key) or self._read(key)
        if entry is not None and accept is not None and not accept(entry["output"]):
            entry = None
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def _read(self, key: str) -> dict[str, Any] | None:
        fs, path = open_fs(self._url(key))
        try:
            with fs.open(path, "rb") as f:
                entry = json.loads(f.read())
        except (FileNotFoundError, ValueError, OSError):
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("output"), dict):
            return None
        self._seen[key] = entry
        return entry

    def put(self, key: str, output: dict[str, Any], model: str, provider: str) -> None:
        """Keep ``output`` (an answer dumped as JSON) under ``key``.

        Raises:
            StorageError: the cache cannot be written.
        """
        entry = {"output": output, "model": model, "provider": provider}
        data = (json.dumps(entry, sort_keys=True, ensure_ascii=False) + "\n").encode()
        write_bytes_atomic(self._url(key), data)
        self._seen[key] = entry
        self.kept += 1


__all__ = ["JudgeCache", "StorageError", "cache_key"]
