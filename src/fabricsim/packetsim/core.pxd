# C types of packetsim/core.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with core.py: every attribute a class sets, every method the hot path calls.
cimport cython

cdef class Packet:
    cdef public int kind
    cdef public object pdc
    cdef public long long src, dst, psn, size, payload, entropy, ts, cack, sbase
    cdef public object sack
    cdef public tuple hops
    cdef public int hop
    cdef public bint ecn, ar, last_hop

cdef class Route:
    cdef public tuple links, hops, ctrl_hops, tops
    cdef public str label
    cdef public bint ok

cdef class PacketPool:
    cdef public list free
    cpdef Packet get(self)
    cpdef put(self, Packet pkt)

cdef class Sim:
    cdef public long long now
    cdef public list times
    cdef public dict buckets
    cdef public long long events
    cdef public bint stopped
    @cython.locals(bucket=list)
    cpdef at(self, long long t_ps, object fn, object arg=*)
    # t, limit and every ``at`` below stay Python ints: one object is the bucket's dict key
    # and its heap entry (no boxing per use)
    @cython.locals(times=list, buckets=dict, bucket=list, n=cython.longlong, i=cython.Py_ssize_t)
    cpdef long long run(self, long long limit_ps)

cdef class Port:
    cdef public Sim sim
    cdef public list times
    cdef public dict buckets
    cdef public long long link
    cdef public double rate_bps
    cdef public long long delay_ps, ppb
    cdef public object q, hq
    cdef public long long qbytes, hbytes, busy_until
    cdef public bint pending
    cdef public long long cap, hcap, kmin, kmax
    cdef public bint trimming, failed
    cdef public long long hdr
    cdef public object rand
    cdef public long long tx_bytes, tx_pkts, marks, trims, drops, data_drops, peak
    cdef public object _complete
    cdef public dict lbrec
    cdef public double tail_victim
    cpdef long long ser_ps(self, long long size)
    @cython.locals(now=cython.longlong, size=cython.longlong, t=cython.longlong,
                   h=cython.longlong, q=cython.longlong, bucket=list)
    cpdef receive(self, Packet pkt)
    @cython.locals(size=cython.longlong, t=cython.longlong, h=cython.longlong, bucket=list)
    cpdef send(self, Packet pkt, long long now)
    @cython.locals(pkt=Packet, size=cython.longlong, t=cython.longlong, h=cython.longlong,
                   q=cython.longlong, bucket=list)
    cpdef complete(self, object _)

cdef class HostPort(Port):
    cdef public object pull, ctrlq, activeq
    cpdef kick(self)
    @cython.locals(pkt=Packet, bucket=list)
    cpdef complete(self, object _)
