"""The base of every scenario model: unknown keys, NaN/inf and booleans-as-numbers refused."""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator

from fabricsim.units import parse_quantity

BOOL_WORDS = (("on", "off"), ("yes", "no"), ("true", "false"))
"""Word pairs YAML 1.1 reads as booleans: a field whose allowed names include a pair takes the
boolean as that name (``pacing_acks: on`` is ``True`` once parsed, and means ``'on'``)."""


def _takes_bool(annotation: Any) -> bool:
    return annotation is bool or any(_takes_bool(a) for a in get_args(annotation))


def _literal_values(annotation: Any) -> set[Any]:
    if get_origin(annotation) is Literal:
        return set(get_args(annotation))
    return {v for a in get_args(annotation) for v in _literal_values(a)}


def _bool_as_word(annotation: Any, value: bool) -> str | None:
    """The name a YAML 1.1 boolean stands for in a field of names (None: no such pair)."""
    names = _literal_values(annotation)
    for yes, no in BOOL_WORDS:
        if yes in names and no in names:
            return yes if value else no
    return None


class StrictModel(BaseModel):
    """Unknown keys are errors; floats are finite; ``true``/``false`` is not a number.

    pydantic would read ``seed: true`` as 1 and ``size_bytes: false`` as 0; a boolean where a
    number belongs is almost always a mistake, so it is refused in one line.
    """

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, validate_default=True, allow_inf_nan=False
    )

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        aliases = {f.alias: name for name, f in fields.items() if f.alias}
        _no_key_twice(data, aliases)
        words: dict[str, Any] = {}
        for key, value in data.items():
            name = aliases.get(key, key)
            if name in fields and isinstance(value, str | list | dict):
                parsed = _with_units(name, value)
                if parsed is not value:
                    words[key] = parsed
            if (
                isinstance(value, bool)
                and name in fields
                and not _takes_bool(fields[name].annotation)
            ):
                word = _bool_as_word(fields[name].annotation, value)
                if word is None:
                    raise ValueError(
                        f"{name}: must be a number or a name, not {str(value).lower()}"
                    )
                words[key] = word
        return {**data, **words} if words else data

    def _derive(self, name: str, value: Any) -> None:
        """Set a field derived from others without marking it as set by the user."""
        self.__dict__[name] = value


def _no_key_twice(data: dict[Any, Any], aliases: dict[str, str]) -> None:
    """A key given under both its names (``EntropyMaskBits`` and ``entropy_mask_bits``)."""
    for alias, name in aliases.items():
        if alias in data and name in data:
            raise ValueError(
                f"{name}: the same key given twice, under its two names ({alias} and {name}); "
                "keep one"
            )


def _with_units(name: str, value: Any) -> Any:
    """``value`` with unit suffixes read in the unit of key ``name`` ("4MB" of ``size_bytes``
    -> 4000000; each member of a list or map); ``value`` itself when nothing changes."""
    if isinstance(value, str):
        try:
            parsed = parse_quantity(value, name)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        return value if parsed is None else parsed
    if isinstance(value, list):
        items = [_with_units(name, v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        mapped = {k: _with_units(name, v) for k, v in value.items()}
        return value if all(mapped[k] is v for k, v in value.items()) else mapped
    return value
