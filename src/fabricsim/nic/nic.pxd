# C types of nic/nic.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with nic.py: every attribute a class sets, every method the hot path calls.
cimport cython
from fabricsim.nic.pdc cimport NicEnv, Pdc, RxState
from fabricsim.packetsim.calendar cimport Sim
from fabricsim.packetsim.packets cimport Packet, PacketPool, Route
from fabricsim.packetsim.ports cimport HostPort

cdef class Nic:
    cdef public NicEnv env
    cdef public long long host
    cdef public HostPort port
    cdef public object ctrl, active
    cdef public dict groups
    cdef public long long groups_created, ooo_events, max_ooo, nacks, timeouts
    cdef public long long early_failures, duplicates, trimmed_received, acks_sent
    cdef public long long nacks_sent, data_received, retransmissions
    cdef public object _rand
    cdef public long long hdr, coalesce
    cdef public dict rcache
    cdef public bint ack_by_bytes, ack_request, groups_enabled
    cdef public Sim sim
    cdef public PacketPool pool
    cdef public long long ctrl_run, ctrl_per_data
    cdef public long long cnps_sent, cnps_received, naks_received, nak_ps, cnp_ps

    cpdef activate(self, Pdc pdc)
    cpdef Packet pull(self)
    @cython.locals(pdc=Pdc, pkt=Packet)
    cpdef Packet _next_data(self)
    # psn, cum and base stay Python ints: they shift the receive bitmap (no 64-bit limit)
    @cython.locals(pdc=Pdc, rx=RxState, urgent=cython.bint, t=cython.longlong, route=Route)
    cpdef receive(self, Packet pkt)
    @cython.locals(pdc=Pdc)
    cpdef receive_ctrl(self, Packet pkt)
    @cython.locals(t=cython.longlong)
    cpdef _advance(self, RxState rx, object cum)
    cpdef _answer(self, Packet pkt, Pdc pdc, RxState rx, object psn, bint urgent)
    cpdef bint _placed(self, Pdc pdc, RxState rx, Packet pkt)
    cpdef bint _held(self, Packet pkt, RxState rx, bint urgent)
    @cython.locals(held=cython.longlong)
    cpdef _out_of_order(self, RxState rx, object offset)
    cpdef _sack(self, Packet pkt, RxState rx, object psn, int kind)
    cpdef _nak(self, Packet pkt, Pdc pdc, RxState rx, long long now)
    @cython.locals(cnp=Packet)
    cpdef _send_cnp(self, Pdc pdc, long long entropy)
    @cython.locals(route=Route)
    cpdef _turn_around(self, Packet pkt, Pdc pdc)
