# C types of transport/roce_sr.py for the compiled build (setup.py; the .py is the
# implementation).  Keep in step with roce_sr.py: every attribute a class sets, every method the
# hot path calls.
cimport cython
from fabricsim.nic.nic cimport Nic
from fabricsim.nic.pdc cimport Pdc, RxState
from fabricsim.packetsim.packets cimport Packet

cdef class RoceSrNic(Nic):
    @cython.locals(pdc=Pdc, rx=RxState, urgent=cython.bint, now=cython.longlong)
    cpdef receive(self, Packet pkt)

cdef class RoceSrPdc(Pdc):
    cdef public long long cap_pkts
    @cython.locals(st=bytearray)
    cpdef Packet next_packet(self)
    @cython.locals(ts=cython.longlong, hi=cython.longlong, psn=cython.longlong, st=bytearray,
                   sent=cython.longlong[::1])
    cpdef on_nack(self, Packet pkt)
    @cython.locals(p=cython.longlong, t0=cython.longlong, st=bytearray,
                   sent=cython.longlong[::1])
    cpdef _timeout(self, long long psn, long long entropy)
