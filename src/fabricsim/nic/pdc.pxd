# C types of nic/pdc.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with pdc.py: every attribute a class sets, every method the hot path calls.
cimport cython
from fabricsim.cc.base cimport CongestionControl
from fabricsim.lb.spraying cimport SprayingStrategy
from fabricsim.packetsim.calendar cimport Sim
from fabricsim.packetsim.packets cimport Packet, PacketPool, Route
from fabricsim.packetsim.forwarding cimport RouteTable

cdef class TxQueue:
    cdef public long long[::1] buf
    cdef public long long head, n, mask
    @cython.locals(i=cython.longlong)
    cpdef push(self, long long deadline, long long psn, long long t0, long long entropy)
    cpdef long long first(self, long long k)
    cpdef pop(self)
    cpdef clear(self)

cdef class MonitorLog:
    cdef public long long[::1] ints
    cdef public long long n
    cdef public list reasons, states, routes
    @cython.locals(i=cython.longlong)
    cpdef add(self, long long time_ps, bint retx, long long flow, long long psn,
              long long entropy, bint explored, object reason, object route, object state,
              long long cached)

cdef class NicEnv:
    cdef public Sim sim
    cdef public RouteTable routes
    cdef public object cfg, window_packets, on_rx_done, on_tx_failed, rand_of
    cdef public MonitorLog monitor
    cdef public object spine
    cdef public dict rcache
    cdef public PacketPool pool
    cdef public long long rto_ps, freezing_ps, mss, hdr, max_retries, coalesce, ctrl_per_data
    cdef public double fd_mult
    cdef public bint ack_by_bytes, ack_request, rto_backoff, recycle_last_hop
    cdef public long long nak_ps, cnp_ps, base_rtt_ps
    cdef public object counters
    cdef public double window_cap_bdp
    cdef public bint csig_cc
    cdef public long long csig_reps_ps

cdef class RxState:
    cdef public long long cum, count, bytes, done_ps, unacked, dups, nak_psn, nak_at, cnp_at
    cdef public object win, group
    cdef public bint hole_ar

cdef class Pdc:
    cdef public long long flow, index, src, dst, src_port, size, npkts, mss
    cdef public long long wire_full, wire_last, last_payload, next_psn
    cdef public bytearray st, tmo
    cdef public long long[::1] sent_ts
    cdef public long long una
    cdef public object ack_w
    cdef public long long acked_pkts, acked_bytes, inflight
    cdef public object retx, group, nic
    cdef public NicEnv env
    cdef public CongestionControl cc
    cdef public SprayingStrategy spray
    cdef public bint in_active, closed, failed, wake_pending, paced, feedback
    cdef public RxState rx
    cdef public list rto_q
    cdef public long long rto_at, rto_tok
    cdef public TxQueue fd_q
    cdef public long long fd_at
    cdef public double rate_cap_bps, next_send_ps, floor_bytes
    cdef public long long first_entropy
    cdef public dict routes_used
    cdef public object last_route
    cdef public long long sent, retransmitted, rkey, rkey_back, acked_ps, qp_bits, last_run

    @cython.locals(psn=cython.longlong, size=cython.longlong, retx=cython.bint, st=bytearray,
                   cc=CongestionControl)
    cpdef Packet next_packet(self)
    @cython.locals(now=cython.longlong, entropy=cython.longlong, pkt=Packet, env=NicEnv,
                   spray=SprayingStrategy, route=Route)
    cpdef Packet _emit(self, long long psn, long long size, bint retx)
    # rto << level may pass 64 bits: backed_off() shifts Python ints
    @cython.locals(deadline=cython.longlong, fd=cython.longlong, env=NicEnv, q=TxQueue,
                   level=cython.int)
    cpdef _track(self, long long psn, long long now, long long entropy)
    @cython.locals(now=cython.longlong, st=bytearray, ts=cython.longlong[::1], nxt=cython.longlong,
                   q=TxQueue, psn=cython.longlong, entropy=cython.longlong)
    cpdef _on_rto(self, object tok)
    @cython.locals(now=cython.longlong, st=bytearray, ts=cython.longlong[::1], q=TxQueue,
                   psn=cython.longlong, entropy=cython.longlong)
    cpdef _on_fd(self, object _)
    @cython.locals(una=cython.longlong, acked=cython.longlong,
                   psn=cython.longlong, size=cython.longlong, last=cython.longlong,
                   t=cython.longlong, st=bytearray, now=cython.longlong, ts=cython.longlong,
                   entropy=cython.longlong, ecn=cython.bint, env=NicEnv,
                   csig=cython.longlong, rtt=cython.longlong)
    cpdef on_ack(self, Packet pkt)
    @cython.locals(psn=cython.longlong, ts=cython.longlong, entropy=cython.longlong,
                   ecn=cython.bint, size=cython.longlong, path_ok=cython.bint)
    cpdef on_nack(self, Packet pkt)
    @cython.locals(size=cython.longlong)
    cpdef long long _lose(self, long long psn)
    cpdef _arm_rto(self, long long deadline)
    cpdef on_cnp(self, Packet pkt)
    cpdef bint _retry(self, long long psn)
    cpdef _timeout(self, long long psn, long long entropy)
