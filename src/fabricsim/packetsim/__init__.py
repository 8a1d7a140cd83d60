"""The packet-level engine: events in integer picoseconds, ports, forwarding (docs/packet-engine.md).

``fabricsim.packetsim.engine.PacketEngine`` is the entry point; ``core`` is the hot path.
"""
