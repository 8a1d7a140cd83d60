"""UET-style NIC: PDCs and PDC groups, reliability (SACK, NACK, RTO), entropy selection.

``spraying`` holds the spraying strategies (``none``, ``default``, ``oblivious``, ``reps``),
``pdc`` the per-connection sender and receiver state, ``nic`` the NIC itself.
"""
