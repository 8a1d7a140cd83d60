"""UET delivery modes (``nic.delivery_mode``): the spraying they allow, and their refusals.

The spraying types (``nic.packet_spraying_type``) declare two traits in config's name table
(:mod:`fabricsim.lb.spraying` writes them); config reads the traits, never a type's name:

* :data:`SINGLE_PATH` -- one entropy value at a time (``none``, ``plb``, ``rod``): the only
  kind ``rod`` allows.  The UET specification keeps reliable ordered delivery on a single
  path whose entropy changes only occasionally (at most every ``t_reroute`` RTTs: the ``rod``
  type's ``nic.reroute_rtts``), and recommends multipath load balancing for the unordered
  modes (``rud``, ``rudi``).
* :data:`NEEDS_FEEDBACK` -- the type reacts to ACKs, NACKs or timeouts (``reps``, ``plb``,
  ``rod``): ``uud`` sends no ACKs, so it refuses them (and a ``nic.cc`` other than
  ``constant``: no controller has anything to react to).

Unset, ``nic.packet_spraying_type`` is ``rod`` under ``rod`` (the other modes keep the
existing rule: ``default``, or ``none`` under a per-flow ``lb.policy``).

Examples
--------
>>> DELIVERY_MODES
('rud', 'rod', 'rudi', 'uud')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabricsim.config.names import has_trait, name_entries

if TYPE_CHECKING:
    from fabricsim.config.models import NicConfig

DELIVERY_MODES = ("rud", "rod", "rudi", "uud")
"""The values of ``nic.delivery_mode``; the first is the default."""
SINGLE_PATH = "single_path"
"""Spraying-type trait: one entropy value at a time (what ``rod`` allows)."""
NEEDS_FEEDBACK = "needs_feedback"
"""Spraying-type trait: it reacts to ACKs, NACKs or timeouts (what ``uud`` cannot give)."""
ORDERED_SPRAYING = "rod"
"""The spraying type an unset ``nic.packet_spraying_type`` takes under ``rod``."""

_POINT = "nic.packet_spraying_type"


def _types(trait: str, present: bool) -> str:
    """The registered spraying types with (or without) ``trait``, as "a, b or c"."""
    names = [e.name for e in name_entries(_POINT) if (trait in e.traits) == present]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


def derive_spraying(nic: NicConfig) -> None:
    """Under ``rod``, an unset spraying type is ``rod`` (one path, rerouted at most every
    ``nic.reroute_rtts`` base RTTs)."""
    if nic.delivery_mode == "rod" and "packet_spraying_type" not in nic.model_fields_set:
        nic._derive("packet_spraying_type", ORDERED_SPRAYING)


def delivery_problem(nic: NicConfig) -> str | None:
    """One line naming both keys if the delivery mode and the spraying type (or, under
    ``uud``, the congestion control) do not go together; None if they do."""
    mode, spray = nic.delivery_mode, nic.packet_spraying_type
    if mode == "rod" and not has_trait(_POINT, spray, SINGLE_PATH):
        return (
            f"nic.delivery_mode rod keeps one path (the entropy changes at most every "
            f"nic.reroute_rtts RTTs), but nic.packet_spraying_type={spray} sprays; set it to "
            f"{_types(SINGLE_PATH, True)}, or use nic.delivery_mode rud, rudi or uud"
        )
    if mode == "uud" and has_trait(_POINT, spray, NEEDS_FEEDBACK):
        return (
            f"nic.delivery_mode uud sends no ACKs, but nic.packet_spraying_type={spray} reacts "
            f"to them; set it to {_types(NEEDS_FEEDBACK, False)}, or use nic.delivery_mode rud"
        )
    if mode == "uud" and nic.cc != "constant":
        return (
            f"nic.delivery_mode uud sends no ACKs, but nic.cc={nic.cc} reacts to them; set "
            "nic.cc=constant (uud sends at the NIC's pace, with no window), or use "
            "nic.delivery_mode rud"
        )
    return None
