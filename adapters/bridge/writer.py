"""Writing layout changes back into Megatron-Bridge files (the Bridge adapter's writer).

* **ConfigContainer YAML**: a field written in the file has its value replaced in place (only the
  value's word: comments, quoting style and an ``&anchor`` in front of it stay); a field not written
  is added under its section (``model:``, ``train:`` ...) at the section's indentation, or a new
  section at the end of the file when the file has none.
* **Recipe launch lines**: the ``KEY=VALUE`` override (or ``run_recipe.py`` option such as ``-tp 2``)
  that sets the field has its value replaced, in the word's own quoting; a field the launch line does
  not set gets ``section.key=value`` at the end of the override list, quoted as the line's other
  overrides are.

The round trip (the file read again gives the asked values, nothing else changed) is checked by
:mod:`trainlint.layout.writeback`, as for every format; the write itself goes through
:mod:`trainlint.files.safe_write`.
"""

from __future__ import annotations

import re
from typing import Any

from trainlint.core.results import FileResult
from trainlint.core.spec import TrainingSpec
from trainlint.files.writing import Buffer, Texts, TextMapping, Writer, WritebackError, yaml_value

from trainlint.adapters.bridge.keys import KEYS
from trainlint.adapters.bridge.spelling import FIELDS, override_text

_DISTRIBUTED_OPTIMIZER = ("ddp.use_distributed_optimizer", "optimizer.use_distributed_optimizer")
"""Bridge turns both on when either is (``_validate_and_sync_distributed_optimizer_settings``)."""
_REDIRECT = re.compile(r"^\d*(>>?|<|>&|&>)")


def _dests(path: str) -> set[str]:
    """The spec settings a ConfigContainer field feeds (its Megatron-LM dests and its ``bridge:`` copy)."""
    from trainlint.adapters.bridge.build import SETTING_PREFIX

    return {k.dest for k in KEYS if k.path == path} | {SETTING_PREFIX + path}


class BridgeWriter(Writer):
    unverified = frozenset({"batch.grad_accum"})  # Megatron-Core derives it from global, micro and DP

    def __init__(self, texts: Texts, result: FileResult, spec: TrainingSpec, changes: dict[str, Any], index: int) -> None:
        """``result``: the file's FileResult (a core type: the writers of every format take it)."""
        self.spec = spec
        self.changes = changes
        self.touched: set[str] = set()
        self.noop: set[str] = set()
        self.buf = texts.buffer(result.path)
        path = result.path.lower()
        from trainlint.adapters.base import looks_like_shell

        self.fields: _Fields
        if path.endswith((".yaml", ".yml")) and not looks_like_shell(self.buf.text):
            self.fields = _YamlFields(self.buf)
        else:
            self.fields = _LaunchFields(self.buf, index)

    def set(self, path: str, value: Any) -> None:
        if value is None and not self.fields.present(path):
            return  # unset already: nothing to write
        self.touched |= _dests(path)
        self.fields.set(path, value)

    def run(self) -> None:
        c, spec = self.changes, self.spec
        for key, value in c.items():
            if key in ("parallel.virtual_pipeline",):
                self.set(FIELDS[key], value if isinstance(value, int) and value > 1 else None)
            elif key == "memory.recompute":
                self.set(FIELDS[key], None if value in (None, "none") else value)
            elif key == "parallel.distributed_optimizer":
                self._distributed_optimizer(bool(value))
            elif key in FIELDS:
                self.set(FIELDS[key], value)
            elif key in ("parallel.zero_stage", "parallel.pipeline_engine"):
                self.unsupported(spec, key, value, "a Megatron-Bridge ConfigContainer")
        # written together: a launch line appends its new overrides in one word run
        self.fields.finish()

    def _distributed_optimizer(self, on: bool) -> None:
        present = [p for p in _DISTRIBUTED_OPTIMIZER if self.fields.present(p)]
        if on:
            for p in present or ["optimizer.use_distributed_optimizer"]:
                self.set(p, True)
        else:
            for p in present:  # either left on turns both on again
                self.set(p, False)


class _Fields:
    def present(self, path: str) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def set(self, path: str, value: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def finish(self) -> None:
        pass


# ================================================================================== YAML


_ANCHOR = re.compile(r"&[^\s]+\s+")


class _YamlFields(_Fields):
    def __init__(self, buf: Buffer) -> None:
        from trainlint.adapters.text.yaml_tree import parse_yaml

        tree = parse_yaml(buf.text, buf.path)
        if not tree.ok or not isinstance(tree.data, dict):
            raise WritebackError(f"{buf.path}: cannot read this file as a ConfigContainer YAML (YAML syntax?)")
        self.m = TextMapping(buf, tree.data, tree.key_spans, tree.value_spans, "yaml")
        self.buf = buf

    @staticmethod
    def _pointer(path: str) -> str:
        return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path.split("."))

    def present(self, path: str) -> bool:
        return self.m.has(self._pointer(path))

    def set(self, path: str, value: Any) -> None:
        ptr = self._pointer(path)
        section, _, key = ptr.rpartition("/")
        if self.m.has(ptr):
            current = self.m.get(ptr)
            if isinstance(current, (dict, list)):
                raise WritebackError(f"{self.m.where(ptr)}: `{path}` is not a single value")
            self._replace(ptr, value)
        elif section and self.m.has(section):
            if not isinstance(self.m.get(section), dict):
                raise WritebackError(f"{self.m.where(section)}: `{path.rpartition('.')[0]}` is not a mapping")
            members = list(self.m.children(section))
            self.m.insert(section, key, value, after=members[-1] if members else None)
        else:
            top = self.m.children("")
            if not top:
                raise WritebackError(f"{self.buf.path}: an empty ConfigContainer; trainlint does not add `{path}` to it")
            self.m.insert("", section.lstrip("/"), {key: value}, after=top[-1])

    def _replace(self, ptr: str, value: Any) -> None:
        span = self.m.value_spans[ptr]
        a, b = self.buf.offsets(span)
        old = self.buf.text[a:b]
        anchor = _ANCHOR.match(old)
        if anchor is not None:  # `&tp 2`: the anchor stays, its value changes (aliases follow: the round trip says)
            a += anchor.end()
            old = old[anchor.end():]
        if old.startswith("*"):
            old = ""  # an alias becomes the value itself (the anchor it named stays as it is)
        self.buf.replace(a, b, yaml_value(value, old or None))


# =========================================================================== launch lines


class _LaunchFields(_Fields):
    def __init__(self, buf: Buffer, index: int) -> None:
        from trainlint.adapters.bridge.launch import find_launches

        launches = find_launches(buf.text)
        if index >= len(launches):
            raise WritebackError(f"{buf.path}: the recipe launch was not found again when re-reading the script")
        self.launch = launches[index]
        self.buf = buf
        self.added: list[str] = []

    def _override(self, path: str):
        """The override that decides ``path`` (the last one naming it; KEY=VALUE words come after the options)."""
        found = None
        for o in self.launch.overrides:
            if o.path == path:
                found = o
        return found

    def present(self, path: str) -> bool:
        o = self._override(path)
        if o is not None:
            return o.op != "~"
        from trainlint.adapters.bridge.recipes import find_recipe

        name = self.launch.recipe.text if self.launch.recipe is not None else None
        recipe = find_recipe(name) if name else None
        return recipe is not None and (path in recipe.values or path in recipe.computed)

    def set(self, path: str, value: Any) -> None:
        for w in self.launch.unknown:
            head = w.raw.lstrip("'\"+~")
            if head.startswith((path + "=", path + "'", path + '"')):
                raise WritebackError(f"{self._where(w.start)}: `{path}` is set by `{w.raw}`, known only at launch; "
                                     "trainlint does not rewrite it")
        o = self._override(path)
        text = override_text(value)
        if o is None:
            self.added.append(f"{path}={text}")
            return
        if o.op == "~" or o.word is None:
            raise WritebackError(f"{self._where(None)}: `{path}` is deleted by `{o.spelled}` on the launch line; "
                                 "trainlint does not write it back")
        if o.spelled.startswith("-"):
            self._replace_word(o.word.start, o.word.end, text, None)
        else:
            self._replace_word(o.word.start, o.word.end, text, o.spelled.partition("=")[0])

    def _where(self, offset: int | None) -> str:
        if offset is None:
            anchor = self.launch.anchor
            return f"{self.buf.path}:{anchor.line}" if anchor is not None else self.buf.path
        return f"{self.buf.path}:{self.buf.line_no(offset)}"

    def _replace_word(self, start: int, end: int, value: str, key: str | None) -> None:
        """Replace the value of the shell word at [start, end) (``key`` given: a ``KEY=VALUE`` word),
        keeping its quoting: ``'k=v'`` / ``"k=v"`` (the whole word), ``k='v'`` (the value), or bare."""
        raw = self.buf.text[start:end]
        if "\\" in raw or "$" in raw or "`" in raw:
            raise WritebackError(f"{self._where(start)}: `{raw}` is escaped or expanded by the shell; trainlint does not "
                                 "rewrite it")
        eq = raw.find("=") + 1 if key is not None else 0
        if key is not None and eq == 0:
            raise WritebackError(f"{self._where(start)}: `{raw}` has no value to replace")
        q = raw[:1]
        if q in "'\"" and raw.endswith(q) and raw.count(q) == 2 and len(raw) > 1:
            if key is not None:  # the whole word quoted: "model.x=4"
                self.buf.replace(start + eq, end - 1, value)
            else:
                self.buf.replace(start + 1, end - 1, value)
            return
        rest = raw[eq:]
        vq = rest[:1]
        if vq in "'\"" and rest.endswith(vq) and rest.count(vq) == 2 and len(rest) > 1:
            self.buf.replace(start + eq + 1, end - 1, value)  # model.x='4'
            return
        if "'" in raw or '"' in raw:
            raise WritebackError(f"{self._where(start)}: `{raw}` is quoted in a way trainlint does not rewrite")
        self.buf.replace(start + eq, end, value)

    def finish(self) -> None:
        if not self.added:
            return
        words = list(self.launch.args)
        # after the last KEY=VALUE override; else after the launch's last argument (before a redirection)
        keyed = [o.word for o in self.launch.overrides if o.word is not None and not o.spelled.startswith("-")]
        if keyed:
            last = max(keyed, key=lambda w: w.end)
        else:
            kept = []
            for w in words:
                if _REDIRECT.match(w.raw) or w.raw == "&":
                    break
                kept.append(w)
            if not kept:
                last = self.launch.runner
            else:
                last = kept[-1]
        quote = ""
        if keyed:
            raw = max(keyed, key=lambda w: w.end).raw
            quote = raw[:1] if raw[:1] in "'\"" and raw.endswith(raw[:1]) else ""
        text = "".join(f" {quote}{a}{quote}" for a in self.added)
        self.buf.insert(last.end, text)
