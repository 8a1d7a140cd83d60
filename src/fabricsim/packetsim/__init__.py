"""The packet-level engine: events in integer picoseconds, ports, forwarding (docs/packet-engine.md).

``fabricsim.packetsim.engine.PacketEngine`` is the entry point.  The hot path, one concept per
module: ``calendar`` (the event calendar), ``packets`` (packets and routes), ``ports`` (output
queues) and ``pfc`` (the PFC component a lossless port holds).
"""
