# C types of cc/base.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with base.py: every attribute the class sets, every method the hot path calls.
cdef class CongestionControl:
    cdef public object params, pacing_bps
    cdef public long long base_rtt_ps
    cdef public double cwnd_bytes
    cpdef on_ack(self, long long now_ps, long long acked_bytes, object rtt_ps, bint ecn,
                 long long inflight_bytes)
    cpdef on_nack(self, long long now_ps, long long nacked_bytes, object rtt_ps=*)
    cpdef on_timeout(self, long long now_ps)
    cpdef on_cnp(self, long long now_ps)
    cpdef on_send(self, long long now_ps, long long wire_bytes)
