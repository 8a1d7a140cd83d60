# C types of packetsim/ports.py for the compiled build (setup.py; the .py is the
# implementation).  Keep in step with ports.py: every attribute a class sets, every method
# the hot path calls.
cimport cython
from fabricsim.packetsim.calendar cimport Sim
from fabricsim.packetsim.packets cimport Element, Packet
from fabricsim.packetsim.pfc cimport Pfc, SharedBuffer

cdef inline double _draw(object rand)

cdef class InputArbiter:
    cdef public dict lanes
    cdef public object ring
    @cython.locals(lane=list, last=Packet)
    cpdef push(self, Packet pkt)
    @cython.locals(lane=list, pkt=Packet, nxt=Packet)
    cpdef Packet pop(self)

cdef class Port(Element):
    cdef public Sim sim
    cdef public long long link
    cdef public double rate_bps
    cdef public long long delay_ps, ppb
    cdef public Packet head, tail, hhead, htail
    cdef public long long qbytes, hbytes, busy_until
    cdef public bint pending
    cdef public long long cap, hcap, kmin, kmax
    cdef public bint trimming, failed
    cdef public long long hdr
    cdef public object rand
    cdef public long long tx_bytes, tx_pkts, marks, trims, drops, data_drops, peak
    cdef public dict lbrec
    cdef public double tail_victim, pmax
    cdef public bint paused
    cdef public Pfc pfc, pfc_kept
    cdef public InputArbiter arb
    cdef public object llr
    cpdef long long ser_ps(self, long long size)
    @cython.locals(pkt=Packet)
    cpdef list queued(self, bint priority)
    @cython.locals(last=Packet)
    cdef _push(self, Packet pkt)
    @cython.locals(last=Packet)
    cdef _hpush(self, Packet pkt)
    @cython.locals(victim=Packet, before=Packet)
    cdef Packet _swap_tail(self, Packet pkt)
    @cython.locals(now=cython.longlong, size=cython.longlong, t=cython.longlong,
                   h=cython.longlong, q=cython.longlong, up=Pfc)
    cpdef receive(self, Packet pkt)
    @cython.locals(size=cython.longlong, t=cython.longlong, h=cython.longlong)
    cpdef send(self, Packet pkt, long long now)
    @cython.locals(pkt=Packet, nxt=Packet, size=cython.longlong, t=cython.longlong,
                   h=cython.longlong, q=cython.longlong, up=Pfc)
    cpdef complete(self, object _)
    cpdef restart(self)
    cpdef wake(self)

cdef class HostPort(Port):
    cdef public object pull, ctrlq, activeq
    cpdef kick(self)
    @cython.locals(pkt=Packet)
    cpdef complete(self, object _)
    cpdef restart(self)
