"""Documented, validated settings: the base class of every config model (GRPO, SFT, synthesis,
steering) and the one YAML loader for config files.

A config is a pydantic model whose every field has a `description` and its range (`ge`/`le`/`gt`/
`lt`, `Literal` choices). It comes from defaults <- a YAML file <- `key=value` overrides, and any
bad key or value is one `UserError` line naming the key ("did you mean ..." for typos). To write a
new one (see mvp_core/train/config.py for a full example):

    class SFTConfig(DocumentedConfig):
        max_steps: int = Field(100, ge=1, le=1_000_000, description="Optimizer steps to run.")

    cfg = SFTConfig.load("sft.yaml", ["max_steps=5"])     # validated, or a one-line UserError
    print(SFTConfig.documented_yaml(cfg))                  # every key with its documentation

Validators may raise `UserError` themselves (pydantic lets non-ValueError exceptions through), which
is how cross-field rules keep their own one-line message.

The YAML loader refuses files over `MAX_CONFIG_BYTES` and any anchor or alias: a config is a short
flat mapping, and aliases are how a few bytes of YAML expand into gigabytes ("billion laughs")."""
from __future__ import annotations

import difflib
import math
import typing
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from mvp_core.errors import UserError
from mvp_core.jsonl import read_user_text

MAX_CONFIG_BYTES = 64 * 1024
IGNORED_KEYS = ("run_info",)     # what a run recorded about itself in its config.yaml


# ---- the YAML loader -----------------------------------------------------------------------------

class _NoAliasLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses anchors (&a) and aliases (*a)."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise UserError(f"{self._source}: line {event.start_mark.line + 1}: YAML anchors and aliases "
                            f"are not allowed in a config")
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        # pydantic sees a dict, so a repeated key would silently keep its last value; a key that is
        # not text (`1: 2`, `null: x`) names no setting and has no spelling to suggest
        self.flatten_mapping(node)
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            where = f"{self._source}: line {key_node.start_mark.line + 1}"
            if not isinstance(key, str):
                raise UserError(f"{where}: config keys are names, not {key!r}")
            if key in seen:
                raise UserError(f"{where}: key {key!r} is given twice")
            seen.add(key)
        return super().construct_mapping(node, deep)


def _load_yaml(text: str, source: str):
    """The value a YAML text holds, with _NoAliasLoader's rules; YAMLError or ValueError (an integer
    of more than 4300 digits) when it is not valid."""
    loader = _NoAliasLoader(text)
    loader._source = source
    try:
        return loader.get_single_data()
    except RecursionError:        # [[[[... thousands deep: the parser recurses; no config nests like that
        raise UserError(f"{source}: the YAML nests too deeply; a config is a short mapping") from None
    finally:
        loader.dispose()


def parse_yaml_mapping(text: str, source: str = "config", ignore: tuple = IGNORED_KEYS) -> dict:
    """The mapping a YAML config text holds ({} for an empty text), without the `ignore` keys;
    one-line UserError otherwise."""
    if len(text.encode("utf-8", "replace")) > MAX_CONFIG_BYTES:
        raise UserError(f"{source} is larger than {MAX_CONFIG_BYTES // 1024} KiB; a config is a short mapping")
    try:
        loaded = _load_yaml(text, source)
    except (yaml.YAMLError, ValueError) as e:
        raise UserError(f"{source} is not valid YAML ({str(e).splitlines()[0]})") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise UserError(f"{source} must hold a mapping of config keys, not a {type(loaded).__name__}")
    for key in ignore:
        loaded.pop(key, None)
    return loaded


def load_yaml_mapping(path: str | Path, ignore: tuple = IGNORED_KEYS) -> dict:
    """The mapping a YAML config file holds; a missing, huge or malformed file is a one-line UserError."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"config file {p} does not exist")
    if p.stat().st_size > MAX_CONFIG_BYTES:
        raise UserError(f"{p} is larger than {MAX_CONFIG_BYTES // 1024} KiB; a config is a short mapping")
    try:
        text = read_user_text(p, "config file")
    except OSError as e:
        raise UserError(f"cannot read config file {p} ({e})") from None
    return parse_yaml_mapping(text, str(p), ignore)


def parse_overrides(items: list[str]) -> dict:
    """['lr=1e-5', 'reward_weights.format=1'] -> {...}; values are parsed as YAML scalars."""
    out: dict = {}
    for item in items:
        if "=" not in item:
            raise UserError(f"override {item!r} is not key=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        try:     # the config file's rules: an alias here expands as in a file ("billion laughs")
            value = _load_yaml(raw, f"override {key}") if raw.strip() else ""
        except (yaml.YAMLError, ValueError):
            value = raw
        if "." in key:   # one level of nesting: reward_weights.format=1
            head, sub = key.split(".", 1)
            below = out.setdefault(head, {})
            if not isinstance(below, dict):
                raise UserError(f"override {item!r}: {head} is already set to {below!r}, which has no keys")
            below[sub] = value
        else:
            out[key] = value
    return out


# ---- the base model ------------------------------------------------------------------------------

def _bounds(field) -> dict:
    """{'ge': 1, 'le': 10, ...} of a field's numeric constraints."""
    out = {}
    for m in field.metadata:
        for name in ("ge", "gt", "le", "lt"):
            if getattr(m, name, None) is not None:
                out[name] = getattr(m, name)
    return out


def _num(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def range_text(field) -> str:
    """'[1, 1000]', '(0, 1]', '>= 0', ... or '' for a field without numeric bounds."""
    b = _bounds(field)
    lo = ("[", b["ge"]) if "ge" in b else ("(", b["gt"]) if "gt" in b else None
    hi = ("]", b["le"]) if "le" in b else (")", b["lt"]) if "lt" in b else None
    if lo and hi:
        return f"{lo[0]}{_num(lo[1])}, {_num(hi[1])}{hi[0]}"
    if lo:
        return f"{'>=' if lo[0] == '[' else '>'} {_num(lo[1])}"
    if hi:
        return f"{'<=' if hi[0] == ']' else '<'} {_num(hi[1])}"
    return ""


def _choices(annotation) -> tuple | None:
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    return None


class DocumentedConfig(BaseModel):
    """Base of every config model: unknown keys refused, NaN/Infinity refused, assignments validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False,
                              validate_default=True)

    # -- documentation --
    @classmethod
    def field_docs(cls) -> dict[str, str]:
        """{name: description, plus its range or choices} for every field, in declaration order."""
        out = {}
        for name, f in cls.model_fields.items():
            doc = f.description or ""
            if doc and not doc.endswith((".", "?")):
                doc += "."
            choices = _choices(f.annotation)
            rng = range_text(f)
            if choices:
                doc += f" One of: {', '.join(map(str, choices))}."
            elif rng:
                doc += f" Range: {rng}."
            out[name] = doc
        return out

    def to_dict(self) -> dict:
        return self.model_dump()

    def to_yaml(self, extra: dict | None = None) -> str:
        d = self.to_dict()
        return yaml.safe_dump({**extra, **d} if extra else d, sort_keys=False)

    @classmethod
    def documented_yaml(cls, cfg: DocumentedConfig | None = None) -> str:
        """The config as YAML with each key's documentation as a comment above it."""
        cfg = cfg if cfg is not None else cls()
        lines = []
        for name, doc in cls.field_docs().items():
            lines.append(f"# {doc}")
            # flow style keeps lists and mappings on one line; drop the end-of-document marker
            value = yaml.safe_dump(getattr(cfg, name), default_flow_style=True).strip()
            lines.append(f"{name}: {value.removesuffix('...').strip()}")
        return "\n".join(lines) + "\n"

    # -- building --
    @classmethod
    def load(cls, path: str | Path | None = None, overrides: list[str] | None = None):
        """Defaults <- YAML file <- `key=value` overrides, validated once at the end."""
        return cls.from_values(load_yaml_mapping(path) if path else {}, parse_overrides(overrides or []))

    @classmethod
    def from_values(cls, *layers: dict, base: DocumentedConfig | None = None):
        """Merge `layers` (later wins; a mapping-valued key merges into the one below) over `base`
        (or the defaults) and validate the result; a bad key or value is a one-line UserError."""
        values = base.model_dump() if base is not None else {}
        for layer in layers:
            for key, value in layer.items():
                if key not in cls.model_fields:
                    raise cls.unknown_key(key)
                value = cls._prepare(key, value)
                below = values[key] if key in values else cls.model_fields[key].get_default(call_default_factory=True)
                if isinstance(value, dict) and isinstance(below, dict):
                    value = {**below, **value}
                values[key] = value
        try:
            return cls.model_validate(values)
        except ValidationError as e:
            raise cls.user_error(e) from None

    @classmethod
    def _prepare(cls, key: str, value):
        """Spell YAML/CLI values the way the field expects before pydantic checks them."""
        ann = cls.model_fields[key].annotation
        choices = _choices(ann)
        if choices and isinstance(value, bool) and "true" in choices:
            return "true" if value else "false"          # YAML reads `bf16: true` as a bool
        if ann is str and value is None:
            return ""
        if ann is str and isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if ann in (int, float) and isinstance(value, str):
            try:   # YAML 1.1 reads "1e-6" (no dot) as a string
                number = float(value)
            except ValueError:
                return value
            return int(number) if ann is int and number.is_integer() else number
        if typing.get_origin(ann) is list and isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    # -- one-line errors --
    @classmethod
    def unknown_key(cls, key: str) -> UserError:
        close = difflib.get_close_matches(key, list(cls.model_fields), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return UserError(f"unknown config key {key!r}{hint}")

    @classmethod
    def user_error(cls, e: ValidationError) -> UserError:
        """The first error of a ValidationError as one line naming the key."""
        err = e.errors()[0]
        loc = [str(x) for x in err["loc"]]
        key, kind, value = (loc[0] if loc else ""), err["type"], err.get("input")
        f = cls.model_fields.get(key)
        if kind == "extra_forbidden":
            return cls.unknown_key(key)
        if kind == "literal_error" and f is not None and _choices(f.annotation):
            choices = [str(c) for c in _choices(f.annotation)]
            close = difflib.get_close_matches(str(value), choices, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return UserError(f"{key} must be one of {', '.join(choices)}, not {value!r}{hint}")
        if kind.startswith("int_"):
            return UserError(f"{key} must be an integer, got {value!r}")
        if kind == "finite_number" or (isinstance(value, float) and not math.isfinite(value)):
            return UserError(f"{key} must be a finite number, got {value!r}")
        if kind.startswith("float_"):
            return UserError(f"{key} must be a number, got {value!r}")
        if kind.startswith("bool_"):
            return UserError(f"{key} must be true or false, got {value!r}")
        if kind in ("greater_than", "greater_than_equal") and f is not None:
            op = ">=" if kind.endswith("equal") else ">"
            return UserError(f"{key} must be {op} {_num(next(iter(err['ctx'].values())))}, got {_num(value)}")
        if kind in ("less_than", "less_than_equal") and f is not None:
            rng = range_text(f)
            where = f"in {rng}" if rng[:1] in "[(" else rng
            return UserError(f"{key} must be {where}, got {_num(value)}")
        for prefix, what in (("list_", "a list"), ("dict_", "a mapping"), ("string_", "a string")):
            if kind.startswith(prefix):
                return UserError(f"{key} must be {what}, got {value!r}")
        where = ".".join(loc) or "config"
        msg = err["msg"].removeprefix("Value error, ")     # a validator's own ValueError text, as written
        return UserError(f"{where}: {msg} (got {value!r})")
