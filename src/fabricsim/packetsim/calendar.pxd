# C types of packetsim/calendar.py for the compiled build (setup.py; the .py is the
# implementation).  Keep in step with calendar.py: every attribute a class sets, every method
# the hot path calls.
cimport cython
from fabricsim.packetsim.packets cimport Element

# perf: prefetch(lst, i, n) asks the CPU to load the first n cache lines of the object lst[i]
# without waiting for them (no reference taken, nothing read): Sim.run asks for the next
# event's callable and argument while the current event runs.  At 1,024 hosts the loop
# waited on these loads (the object headers missed the caches); pure Python skips the call.
# perf: put(lst, i, v) is lst[i] = v and take(lst, i) returns lst[i] leaving None there, on
# the calendar's slot list (in range by construction): Sim.at and Sim.run set and clear two
# slot items per event.  Written as list items, gcc kept Cython's generic item setter out of
# line once the calendar was its own module: 118 M of the 4.5 G instructions of a 128-host run
# (callgrind), +11 % engine time; these are the few instructions of a list's item store.
cdef extern from *:
    """
    static CYTHON_INLINE void fabricsim_prefetch(PyObject *lst, Py_ssize_t i, int n) {
        const char *o = (const char *)PyList_GET_ITEM(lst, i);
        for (int k = 0; k < n; k++) __builtin_prefetch(o + 64 * k);
    }
    static CYTHON_INLINE void fabricsim_put(PyObject *lst, Py_ssize_t i, PyObject *v) {
        PyObject *old = PyList_GET_ITEM(lst, i);
        Py_INCREF(v);
        PyList_SET_ITEM(lst, i, v);
        Py_XDECREF(old);
    }
    static CYTHON_INLINE PyObject *fabricsim_take(PyObject *lst, Py_ssize_t i) {
        PyObject *o = PyList_GET_ITEM(lst, i);  /* its reference goes to the caller */
        Py_INCREF(Py_None);
        PyList_SET_ITEM(lst, i, Py_None);
        return o;
    }
    """
    void prefetch "fabricsim_prefetch" (list lst, Py_ssize_t i, int n)
    void put "fabricsim_put" (list lst, Py_ssize_t i, object v)
    object take "fabricsim_take" (list lst, Py_ssize_t i)

cdef bint COMPILED

cdef class RandomPool:
    cdef public object gen
    cdef public double[::1] buf
    cdef public long long block, i
    @cython.locals(i=cython.longlong)
    cpdef double random(self)

cdef long long _SLOT_BITS, _SEQ_LIMIT, _BUCKET_MAX, _TIME_MAX
cdef unsigned long long _ALL

@cython.locals(n=cython.int, half=cython.int, one=cython.ulonglong)
cdef inline int _low_bit(unsigned long long w)

cdef class Sim:
    cdef public long long now, events, seq, size, nfree, cap, osize, wn, wb, nb, bk, bmax, width
    cdef public long long lo, cut, end
    cdef public bint stopped
    # the integer tables: array objects, read as C arrays
    cdef public long long[::1] heap, free, wheel, count
    cdef public unsigned long long[::1] bits
    cdef public list objs
    @cython.locals(slot=cython.longlong, seq=cython.longlong, key=cython.longlong)
    cpdef at(self, long long t_ps, object fn, object arg=*)
    @cython.locals(b=cython.longlong, c=cython.longlong, i=cython.longlong, one=cython.ulonglong)
    cdef bint _bucket(self, long long t, long long key)
    @cython.locals(i=cython.Py_ssize_t, up=cython.Py_ssize_t, tu=cython.longlong)
    cdef _push(self, Py_ssize_t base, Py_ssize_t n, long long t, long long key)
    @cython.locals(n=cython.longlong, slot=cython.longlong, t=cython.longlong,
                   mask=cython.longlong, el=Element)
    cpdef long long run(self, long long limit_ps)
    @cython.locals(wb=cython.longlong, nb=cython.longlong, b=cython.longlong,
                   w=cython.longlong, word=cython.ulonglong, one=cython.ulonglong,
                   c=cython.longlong,
                   i=cython.Py_ssize_t, k=cython.Py_ssize_t, size=cython.Py_ssize_t)
    cdef _turn(self)
    @cython.locals(cap=cython.Py_ssize_t, t=cython.longlong, key=cython.longlong)
    cdef _open(self, long long lo)
    cdef _pop_root(self)
    @cython.locals(size=cython.Py_ssize_t, t=cython.longlong, key=cython.longlong,
                   i=cython.Py_ssize_t, child=cython.Py_ssize_t, first=cython.Py_ssize_t,
                   stop=cython.Py_ssize_t, j=cython.Py_ssize_t, tc=cython.longlong,
                   tj=cython.longlong)
    cdef _pop(self, Py_ssize_t base, Py_ssize_t n)
