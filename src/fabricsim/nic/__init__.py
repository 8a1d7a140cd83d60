"""UET-style NIC: PDCs and PDC groups, reliability (SACK, NACK, RTO), entropy selection.

``pdc`` holds the per-connection sender and receiver state, ``nic`` the NIC itself; the
spraying types it builds by name (``nic.packet_spraying_type``) are in :mod:`fabricsim.lb`
(``lb/spraying.py``, ``lb/reps.py``).
"""
