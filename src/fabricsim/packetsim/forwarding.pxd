# C types of packetsim/forwarding.py for the compiled build (setup.py; the .py is the
# implementation).  Keep in step with forwarding.py: every attribute a class sets, every
# method the route building calls.
cimport cython
from fabricsim.packetsim.packets cimport Route
from fabricsim.routing.mix cimport fmix32_int, header_key

cdef class Forwarding:
    cdef public bint static
    cpdef long long key(self, long long src, long long dst, long long entropy)
    cpdef long long member(self, long long switch, long long group_size, long long key)

cdef class EcmpForwarding(Forwarding):
    cdef public object router, scalar
    cdef public long long nodes
    cdef public dict bases
    cdef public list port_ints, qp_ints
    cdef public str method
    cdef public long long[::1] salts, tiers
    cdef public bint mixed
    @cython.locals(x=cython.longlong, h=cython.longlong)
    cpdef long long member(self, long long switch, long long group_size, long long key)
    cpdef long long key(self, long long src, long long dst, long long entropy)

cdef class RandomForwarding(Forwarding):
    cdef public object rand

cdef class RouteTable:
    cdef public object fabric, sink, spine, nic_rule, namer
    cdef public Forwarding forwarding
    cdef public list ports, nics, nic_ctrl, choices, port_objs, glist, down, special
    cdef public long long[::1] top_of, link_dst, uplink, host_leaf, leaf_row
    cdef public int[::1] gidx, up_gi
    cdef public bint nic_stage, static
    cdef public dict cache, paths, roots
    cdef public long long built, hosts, nleaves
    cpdef Route get(self, long long src, long long dst, long long entropy)
    @cython.locals(leaf=cython.longlong, i=cython.Py_ssize_t, j=cython.longlong, g=tuple)
    cpdef tuple group(self, long long switch, long long dst)
    @cython.locals(row=cython.longlong, special=dict, k=cython.Py_ssize_t)
    cpdef int _group_index(self, long long switch, long long leaf)
    @cython.locals(fwd=Forwarding, hkey=cython.longlong, link=cython.longlong,
                   node=cython.longlong, n=cython.Py_ssize_t, ok=cython.bint, g=tuple,
                   links=list, link_dst=cython.longlong[::1])
    cpdef Route _build(self, long long src, long long dst, long long entropy)
    cpdef Route path_route(self, tuple links, bint ok, long long dst)
