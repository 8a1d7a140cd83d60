# C types of packetsim/packets.py for the compiled build (setup.py; the .py is the
# implementation).  Keep in step with packets.py: every attribute a class sets, every method
# the hot path calls.
from fabricsim.packetsim.pfc cimport Pfc

cdef class Packet:
    cdef public int kind
    cdef public object pdc
    cdef public long long src, dst, psn, size, payload, entropy, ts, cack, sbase
    cdef public object sack
    cdef public tuple hops
    cdef public int hop
    cdef public bint ecn, ar, last_hop
    cdef public Pfc prev
    cdef public Packet nxt, bk
    cdef public long long csig

cdef class Route:
    cdef public tuple links, hops, ctrl_hops, tops
    cdef public object name
    cdef public bint ok
    cdef public object user

cdef class PacketPool:
    cdef public list free
    cpdef Packet get(self)
    cpdef put(self, Packet pkt)

cdef class Element:
    cpdef receive(self, Packet pkt)
    cpdef wake(self)
