"""Transports as registered strategies: ``nic.transport`` names one (:mod:`.base`).

One module per transport: :mod:`.uet` (the default), :mod:`.roce` (go-back-N),
:mod:`.roce_sr` (selective repeat); :mod:`.rc` holds what the RoCE ones share.  Importing the
package registers them, in this order.
"""

from fabricsim.transport.base import (
    Transport,
    register_transport,
    registered_transports,
    transport_for,
    unregister_transport,
)
from fabricsim.transport.roce import Roce
from fabricsim.transport.roce_sr import RoceSr
from fabricsim.transport.uet import Uet

for _cls in (Uet, Roce, RoceSr):
    register_transport(_cls)

__all__ = [
    "Transport",
    "register_transport",
    "registered_transports",
    "transport_for",
    "unregister_transport",
]
