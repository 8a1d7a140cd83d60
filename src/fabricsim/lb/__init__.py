"""Load balancing: one module per method, each selected by name from a registry.

* ``lb.policy``: :func:`~fabricsim.lb.base.register_policy`, ``registered_policies()``;
  modules ``base`` (ecmp), ``static`` (pinned, qp_scaling, ideal_spray), ``ark``.
* ``nic.packet_spraying_type``: :func:`~fabricsim.lb.spraying.register_spraying`,
  ``registered_spraying()``; modules ``spraying`` (none, default, oblivious), ``reps``,
  ``repath`` (plb, rod).
* ``switch.load_balancing_method``: :func:`~fabricsim.lb.switch.register_switch_method`,
  ``registered_switch_methods()``; modules ``switch`` (ecmp), ``switch_adaptive``,
  ``switch_flowlet``, ``switch_spray``.

Each method's module holds its packet-engine strategy, its flow-engine form (or declares that
it is packet only, and why), the engines it runs on and the config keys (knobs) only it reads.
Registering writes the name and its one-line help into config's name table
(:mod:`fabricsim.config.names`), so the scenario accepts it; :func:`registered_methods` lists
every method of the three keys with its help and engines (the engine declarations in
:mod:`fabricsim.experiments.engines` are read from it).  Adding a method is
one new module here, imported below.

**Entropy and source port, one rule.**  *entropy* is the 16-bit value (0..65535) a packet
carries in its UDP source-port field, the value the switches hash: per packet, chosen by the
spraying type (``next_entropy()``, ``on_ack(entropy, ...)``, ``Packet.entropy``, the flows
table's ``entropy`` column).  *src_port* is the UDP source port configured for a flow or a
connection (``FlowTable.src_port``, :attr:`Connection.src_port`, ``Pdc.src_port``, the
``reroute(flow, index, src_port)`` hook): under spraying ``none`` it is the entropy of every
packet of the connection; under the other types it seeds nothing.  Output column names and
config keys keep their names (``entropy_value`` in the UET monitor, ``entropy_mask_bits``).

Examples
--------
>>> [m.name for m in registered_methods("nic.packet_spraying_type")]
['none', 'default', 'oblivious', 'plb', 'rod', 'reps']
>>> [m.name for m in registered_methods("lb.policy") if "packet" not in m.engines]
['ideal_spray']
"""

from fabricsim.lb import (  # noqa: F401  (each module registers its methods)
    ark,
    repath,
    reps,
    spraying,
    static,
    switch,
    switch_adaptive,
    switch_flowlet,
    switch_spray,
)
from fabricsim.lb.base import (
    SPRAY_ALL,
    Connection,
    EngineHooks,
    PathPolicy,
    PolicyContext,
    make_policy,
    register_policy,
    registered_policies,
    unregister_policy,
)
from fabricsim.lb.registry import Method, registered_methods
from fabricsim.lb.spraying import (
    SprayingStrategy,
    register_spraying,
    registered_spraying,
    unregister_spraying,
)
from fabricsim.lb.switch import (
    MemberChoice,
    register_switch_method,
    registered_switch_methods,
    unregister_switch_method,
)

__all__ = [
    "SPRAY_ALL",
    "Connection",
    "EngineHooks",
    "MemberChoice",
    "Method",
    "PathPolicy",
    "PolicyContext",
    "SprayingStrategy",
    "make_policy",
    "register_policy",
    "register_spraying",
    "register_switch_method",
    "registered_methods",
    "registered_policies",
    "registered_spraying",
    "registered_switch_methods",
    "unregister_policy",
    "unregister_spraying",
    "unregister_switch_method",
]
