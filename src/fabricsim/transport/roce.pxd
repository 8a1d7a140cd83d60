# C types of transport/roce.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with roce.py: every method the hot path calls.
cimport cython
from fabricsim.nic.nic cimport Nic
from fabricsim.nic.pdc cimport Pdc, RxState
from fabricsim.packetsim.packets cimport Packet

cdef class RoceNic(Nic):
    @cython.locals(pdc=Pdc, rx=RxState, urgent=cython.bint, now=cython.longlong)
    cpdef receive(self, Packet pkt)

cdef class RocePdc(Pdc):
    @cython.locals(cack=cython.longlong, ts=cython.longlong, stale=cython.bint)
    cpdef on_nack(self, Packet pkt)
    @cython.locals(psn=cython.longlong, state=cython.int, st=bytearray)
    cpdef _go_back(self, long long first)
    cpdef _timeout(self, long long psn, long long entropy)
