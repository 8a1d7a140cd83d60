# C types of lb/spraying.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with spraying.py: every attribute a class sets, every method the hot path calls.
cdef class SprayingStrategy:
    cdef public bint explored
    cdef public object reason
    cpdef long long next_entropy(self)
    cpdef on_ack(self, long long entropy, bint ecn)
    cpdef on_nack(self, long long entropy)
    cpdef on_path_failure(self, long long entropy)

cdef class NoSpraying(SprayingStrategy):
    cdef public object creator
    cpdef long long next_entropy(self)

cdef class DefaultSpraying(SprayingStrategy):
    cdef public long long start, mask, step
    cpdef long long next_entropy(self)

cdef class ObliviousSpraying(SprayingStrategy):
    cdef public object rand
    cdef public long long values, high, xor, i
    cpdef long long next_entropy(self)
