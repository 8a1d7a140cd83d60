"""The base of every scenario model: unknown keys, NaN/inf and booleans-as-numbers refused."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, model_validator


def _takes_bool(annotation: Any) -> bool:
    return annotation is bool or any(_takes_bool(a) for a in get_args(annotation))


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
        for key, value in data.items():
            name = aliases.get(key, key)
            if (
                isinstance(value, bool)
                and name in fields
                and not _takes_bool(fields[name].annotation)
            ):
                raise ValueError(f"{name}: must be a number or a name, not {str(value).lower()}")
        return data

    def _derive(self, name: str, value: Any) -> None:
        """Set a field derived from others without marking it as set by the user."""
        self.__dict__[name] = value
