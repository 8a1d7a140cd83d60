"""UET-style NIC: PDCs and PDC groups, reliability (SACK, NACK, RTO), entropy selection.

``pdc`` holds the per-connection sender and receiver state, ``nic`` the NIC itself; the
spraying types it builds by name (``nic.packet_spraying_type``) are in :mod:`fabricsim.lb`
(``lb/spraying.py``, ``lb/reps.py``).  The NIC is an element of the packet engine; the
transports (:mod:`fabricsim.transport`) subclass :class:`~fabricsim.nic.nic.Nic` and
:class:`~fabricsim.nic.pdc.Pdc` for their receive rules and retransmission.
"""
