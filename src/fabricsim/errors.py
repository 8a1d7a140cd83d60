"""Exceptions that separate bad user input (exit code 2) from internal errors (exit 1)."""

from __future__ import annotations


class FabricsimError(Exception):
    """Base class of fabricsim's own errors."""


class ConfigError(FabricsimError, ValueError):
    """Bad input from the user: a scenario field, an override, a trace or a file.

    The message is one line that names the field (dotted key) and what is allowed.  The CLI
    prints it and exits with code 2; nothing is written.
    """


class EngineRefusal(ConfigError):
    """The chosen engine cannot answer this scenario's question (also exit code 2)."""
