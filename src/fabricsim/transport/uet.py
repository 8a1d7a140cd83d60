"""UET's reliable unordered delivery (``nic.transport: uet``, the default).

The receiver places every packet as it arrives (no reorder buffer) and answers with selective
ACKs (cumulative PSN and a 64-bit bitmap); a trimmed header is answered by a NACK at once and
the sender resends that packet; a retransmission timeout resends the one that timed out.  The
rules are the NIC element's own (:class:`fabricsim.nic.nic.Nic`,
:class:`fabricsim.nic.pdc.Pdc`): this module registers them.
"""

from __future__ import annotations

from fabricsim.nic.nic import Nic
from fabricsim.nic.pdc import Pdc
from fabricsim.transport.base import Transport


class Uet(Transport):
    """UET: SACK, out-of-order placement, NACK on trim."""

    name = "uet"
    label = "UET"
    help = "SACK, out-of-order placement, NACK on trim (UET's reliable unordered delivery)"
    receive_rule = "out of order, SACK; a trimmed header is NACKed"
    nic_class = Nic
    pdc_class = Pdc
