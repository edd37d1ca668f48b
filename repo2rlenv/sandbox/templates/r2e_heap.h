/* The one-time heap: within a graded run no address ever holds two allocations.
 *
 * Why: five red-team rounds in a row (19–23) bought 1.0 through a memory bug of the shipped interpreter, each
 * a different entry point of one class: C code keeps a pointer to memory a call back into the test's code
 * frees (an item its comparison does not hold, a buffer its raw stream keeps, a stream a displayhook
 * writes to), the test then allocates an object of its choosing (an empty bytearray) into the freed block,
 * and the stale pointer turns that object into a reader of any address. Closing entry points one by one
 * (r2e_kernel.c's hardening) does not end the class; taking away the reuse does. With these allocators
 * installed for the interpreter's object and memory domains (every object, and the buffers objects own):
 *
 *   - every block is cut from one reserved region at a pointer that only moves up, so a freed block's
 *     address is never handed out again: a stale pointer reaches the dead block, never an object the test
 *     placed there. A dead block is overwritten with HEAP_DEAD (its type pointer is then no address: the
 *     use of a dead object is a crash, a failing run, never a read);
 *   - growing moves a block and shrinking never does, so an index checked against the old length before a
 *     call back (array's item assignment, gh-142555) lands in the block's own slack or in a dead block;
 *   - a block freed twice, or a pointer freed that no block starts at, stops the process;
 *   - memory comes back to the system a page at a time, when no live block is left on the page and the
 *     pointer has passed it (madvise; the address range stays reserved, so no later mapping can land
 *     there either), and what is in use is capped by the run's address-space limit (RLIMIT_AS) less the
 *     reserve, which the verifier adds to that limit for the run (verifier_zygote).
 *
 * What it does not cover (docs/integrity.md): CPython's free lists other than the float one (closed below:
 * a freed list, tuple or dict is reused by the next object of its own type, so the reuse keeps the type),
 * memory a library gets from libc's malloc itself, and writes past the end of a live block. Blocks made
 * before the switch (the zygote's) are never freed: the allocator that made them would hand them out again
 * (pymalloc's larger blocks are libc's, which every C library shares); a realloc of one is done by that
 * allocator and its result copied out here and overwritten, never freed either. The arenas (pymalloc's,
 * which only that realloc still uses, and the frame stacks) come from the reserve too and are reused only
 * as arenas; those from before the switch, where objects lived, are emptied, never unmapped.
 *
 * The object and memory domains are called with the GIL held (the C API's rule), so no lock is needed; the
 * raw domain, called without it, keeps libc's malloc. */
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define HEAP_RESERVE ((size_t)256 << 30)  /* address space only: nothing is committed until used */
#define HEAP_SMALL_LANE ((size_t)8 << 30) /* the reserve of each small lane (the first 56 GiB) */
#define HEAP_PAGE_SHIFT 12                /* memory goes back a page at a time */
#define HEAP_GROW ((size_t)1 << 20)       /* a lane is made writable this much at a time */
#define HEAP_PAGE ((size_t)1 << HEAP_PAGE_SHIFT)
#define HEAP_POPULATE_WRITE 23            /* MADV_POPULATE_WRITE (Linux 5.14; older headers lack the name) */
#define HEAP_DEAD 0xDB
#define HEAP_POISON 64                    /* the bytes of a dead block overwritten with HEAP_DEAD */
#define HEAP_GONE UINT16_MAX              /* a page given back (a page holds at most 129 blocks) */
#define HEAP_LIVE_MARK ((uint64_t)0x52324548454150ULL)
#define HEAP_FREE_MARK ((uint64_t)0x44454144424c4bULL)

typedef struct {
    size_t size;    /* the block's capacity, a multiple of 16 */
    uint64_t mark;  /* HEAP_LIVE_MARK ^ its address while live, HEAP_FREE_MARK once freed */
} heap_head;

/* Lanes, each a pointer that only moves up: seven for small blocks by size (objects), one for the rest
 * (buffers, arenas). A page goes back only when nothing live is left on it, so one long-lived block among
 * short-lived ones holds them all; blocks of one size tend to live alike. Measured on a real suite (332
 * tests of a library, pytest in one process: peak RSS, with the interpreter's allocator 53 MiB): one lane
 * and 64 KiB chunks 351 MiB, these lanes and pages 155 MiB. */
#define HEAP_LANES 8
static const size_t heap_lane_max[HEAP_LANES - 1] = {32, 48, 64, 80, 112, 144, 272};  /* a block, header included */

typedef struct {
    char *start, *end;  /* its part of the reserve */
    char *top;          /* the next block starts here */
    char *open;         /* [start, open) is writable */
} heap_lane;

static char *heap_base;     /* NULL: not installed */
static heap_lane heap_lanes[HEAP_LANES];
static size_t heap_given_back;
static uint16_t *heap_live; /* per page: live blocks on it, or HEAP_GONE */
static PyMemAllocatorEx heap_prev_mem, heap_prev_obj;

static inline int
heap_owns(const void *p)
{
    return heap_base != NULL && (const char *)p >= heap_base && (const char *)p < heap_base + HEAP_RESERVE;
}

static inline size_t
heap_page(const char *p)
{
    return (size_t)(p - heap_base) >> HEAP_PAGE_SHIFT;
}

/* Pages with nothing live left on them that the pointer has passed (nothing is ever cut from them again)
 * go back together, HEAP_DEAD_BATCH at a time (and before the memory cap refuses a block): most runs end
 * before they have that many, and exiting gives everything back at once; a page at a time, the madvise
 * calls were most of what the heap added to a grading (docs/scoring.md). A page goes on the list once:
 * when the pointer passes it empty, or when its last block dies after that. */
#define HEAP_DEAD_BATCH 8192             /* pages: 32 MiB */
static size_t heap_dead[HEAP_DEAD_BATCH];
static size_t heap_ndead;

static int
heap_by_page(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static void
heap_give_back_dead(void)
{
    qsort(heap_dead, heap_ndead, sizeof(size_t), heap_by_page);
    for (size_t i = 0, j; i < heap_ndead; i = j) {
        for (j = i + 1; j < heap_ndead && heap_dead[j] == heap_dead[j - 1] + 1; j++)
            ;
        /* MADV_DONTNEED keeps the range mapped (later mappings cannot land on it); it reads zero afterwards. */
        madvise(heap_base + (heap_dead[i] << HEAP_PAGE_SHIFT), (j - i) << HEAP_PAGE_SHIFT, MADV_DONTNEED);
        for (size_t k = i; k < j; k++)
            heap_live[heap_dead[k]] = HEAP_GONE;
    }
    heap_given_back += heap_ndead << HEAP_PAGE_SHIFT;
    heap_ndead = 0;
}

static void
heap_give_back(size_t page)
{
    if (heap_live[page] != 0)
        return;
    heap_live[page] = HEAP_GONE;  /* nothing is counted on it again */
    heap_dead[heap_ndead++] = page;
    if (heap_ndead == HEAP_DEAD_BATCH)
        heap_give_back_dead();
}

/* Count a block in or out of the pages it is on; a page its lane's pointer has left with nothing live goes
 * back. */
static void
heap_count(const char *start, size_t len, int delta)
{
    size_t at = (size_t)(start - heap_base);
    const heap_lane *lane = &heap_lanes[at >= HEAP_SMALL_LANE * (HEAP_LANES - 1) ? HEAP_LANES - 1 : at / HEAP_SMALL_LANE];
    size_t current = heap_page(lane->top);
    for (size_t c = heap_page(start), last = heap_page(start + len - 1); c <= last; c++) {
        if (heap_live[c] == HEAP_GONE)
            Py_FatalError("repo2rlenv one-time heap: a block in memory already given back");
        heap_live[c] += delta;
        if (delta < 0 && c < current)
            heap_give_back(c);
    }
}

/* The lane's writable part reaches `end`, within its part of the reserve and the run's memory limit; -1
 * when it cannot. */
static int
heap_reach(heap_lane *lane, const char *end)
{
    if (end <= lane->open)
        return 0;
    if (end > lane->end)
        return -1;
    char *want = lane->start + ((size_t)(end - lane->start) + HEAP_GROW - 1) / HEAP_GROW * HEAP_GROW;
    if (want > lane->end)
        want = lane->end;
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        /* The verifier gives a run its memory limit plus the reserve: what is in use stays under the former. */
        size_t cap = limit.rlim_cur > HEAP_RESERVE ? (size_t)limit.rlim_cur - HEAP_RESERVE : 0;
        size_t opened = (size_t)(want - lane->open);
        for (int i = 0; i < HEAP_LANES; i++)
            opened += (size_t)(heap_lanes[i].open - heap_lanes[i].start);
        if (opened - heap_given_back > cap && heap_ndead > 0)
            heap_give_back_dead();
        if (opened - heap_given_back > cap)
            return -1;
    }
    if (mprotect(lane->open, (size_t)(want - lane->open), PROT_READ | PROT_WRITE) != 0)
        return -1;
    /* Fault the pages in at once (a fault for each page as the pointer reaches it costs several times more);
     * a kernel without MADV_POPULATE_WRITE (before 5.14) faults them one by one. */
    madvise(lane->open, (size_t)(want - lane->open), HEAP_POPULATE_WRITE);
    lane->open = want;
    return 0;
}

static void *
heap_take(size_t size, size_t align)
{
    int which = 0;
    while (which < HEAP_LANES - 1 && (align > 16 || size > heap_lane_max[which]))
        which++;
    heap_lane *lane = &heap_lanes[which];
    char *start = (char *)(((uintptr_t)lane->top + align - 1) & ~(uintptr_t)(align - 1));
    if (size > HEAP_RESERVE)
        return NULL;
    /* A lane whose reserve is spent (8 GiB of one small size allocated in one run) hands on to the next. */
    while (start + size > lane->end && lane < &heap_lanes[HEAP_LANES - 1]) {
        lane++;
        start = (char *)(((uintptr_t)lane->top + align - 1) & ~(uintptr_t)(align - 1));
    }
    if (heap_reach(lane, start + size) < 0)
        return NULL;
    heap_count(start, size, +1);  /* counted before the pointer passes its pages: they are not given back */
    /* Move the pointer, giving back the pages it leaves with nothing live on them. */
    size_t from = heap_page(lane->top), to = heap_page(start + size);
    lane->top = start + size;
    for (size_t c = from; c < to; c++)
        heap_give_back(c);
    return start;
}

/* CPython's float free list links dead floats through their type pointer (3.11 to 3.13): a stale pointer
 * to a float on it sees the previously freed float as its type, and a float's neighbours in a lane are
 * the test's to shape (red team round 24: a fake type slot calling any exported C function, on the heap
 * alone, 5 of 5). The list is kept empty and closed: `numfree` at HEAP_PINNED makes every float's death
 * a heap_free (CPython frees to the allocator when the list is "full") and, the list being empty, every new
 * float a heap_malloc. A full collection empties the free lists and sets `numfree` back to 0: every entry
 * to the heap checks it, and the collector's callbacks list (which, non-empty, makes it allocate right after
 * that reset, before any Python code runs) is one of ours that the test cannot reach (heap_close_floats). */
#if PY_VERSION_HEX >= 0x030D0000
#  if defined(WITH_FREELISTS) && !defined(Py_GIL_DISABLED)
#    define HEAP_FLOATS 1
typedef struct _Py_float_freelist heap_floats_t;
#    define HEAP_FLOATS_OF(interp) (&(interp)->object_state.freelists.floats)
#    define HEAP_FLOATS_HEAD items
#  endif
#elif PyFloat_MAXFREELIST > 0
#  define HEAP_FLOATS 1
typedef struct _Py_float_state heap_floats_t;
#  define HEAP_FLOATS_OF(interp) (&(interp)->float_state)
#  define HEAP_FLOATS_HEAD free_list
#endif
#define HEAP_PINNED (1 << 30)

#ifdef HEAP_FLOATS
static heap_floats_t *heap_floats;

static void
heap_pin_floats(void)
{
    heap_floats->numfree = HEAP_PINNED;  /* first: the frees below must not put them back */
    PyFloatObject *op = heap_floats->HEAP_FLOATS_HEAD;
    heap_floats->HEAP_FLOATS_HEAD = NULL;
    while (op != NULL) {
        PyFloatObject *next = (PyFloatObject *)((PyObject *)op)->ob_type;
        memset(op, HEAP_DEAD, sizeof(PyFloatObject));  /* one from before the switch is kept, not freed */
        PyObject_Free(op);
        op = next;
    }
}

#  define heap_check_floats() \
    do { if (heap_floats != NULL && heap_floats->numfree != HEAP_PINNED) heap_pin_floats(); } while (0)
#else
#  define heap_check_floats() ((void)0)
#endif

static void *
heap_malloc(void *ctx, size_t n)
{
    heap_check_floats();
    if (n > HEAP_RESERVE)
        return NULL;
    size_t size = n == 0 ? 16 : (n + 15) & ~(size_t)15;
    heap_head *head = heap_take(sizeof(heap_head) + size, 16);
    if (head == NULL)
        return NULL;
    head->size = size;
    head->mark = HEAP_LIVE_MARK ^ (uint64_t)(uintptr_t)head;
    return head + 1;
}

static void *
heap_calloc(void *ctx, size_t count, size_t each)
{
    if (each != 0 && count > HEAP_RESERVE / each)
        return NULL;
    /* No block is ever cut twice from the reserve, and the kernel hands its pages out zeroed: a new block
     * reads zero already (only a write past a live block's end, itself a memory bug, could change that). */
    return heap_malloc(ctx, count * each);
}

static heap_head *
heap_head_of(void *p)
{
    heap_head *head = (heap_head *)p - 1;
    if (((uintptr_t)p & 15) != 0 || (char *)head < heap_base || head->mark != (HEAP_LIVE_MARK ^ (uint64_t)(uintptr_t)head))
        Py_FatalError("repo2rlenv one-time heap: a block freed twice, or a pointer no block starts at");
    return head;
}

static void
heap_free(void *ctx, void *p)
{
    heap_check_floats();
    if (p == NULL)
        return;
    if (!heap_owns(p))
        return;  /* a block from before the switch: kept, so that no allocator can hand it out again */
    heap_head *head = heap_head_of(p);
    size_t size = head->size;
    head->mark = HEAP_FREE_MARK;
    /* The object's header, wherever the interpreter put it (its GC links and, on 3.12+, the two words
     * before them come first): a dead object's type is then no address. The rest is left as the object
     * left it: no stale pointer can reach it as anything but what it was. */
    memset(p, HEAP_DEAD, size < HEAP_POISON ? size : HEAP_POISON);
    heap_count((char *)head, sizeof(heap_head) + size, -1);
}

static void *
heap_realloc(void *ctx, void *p, size_t n)
{
    heap_check_floats();
    if (p == NULL)
        return heap_malloc(ctx, n);
    if (heap_owns(p)) {
        heap_head *head = heap_head_of(p);
        if (n <= head->size)
            return p;  /* shrinking never moves: a stale index lands in the block's own slack */
        void *q = heap_malloc(ctx, n);
        if (q == NULL)
            return NULL;
        memcpy(q, p, head->size);
        heap_free(ctx, p);
        return q;
    }
    /* A block from before the switch: its size is the old allocator's to know, so it resizes it; the result
     * is copied out and overwritten (that allocator may have placed it on a block some stale pointer still
     * reaches) and kept, like every block from before the switch. */
    PyMemAllocatorEx *prev = ctx;
    void *q = heap_malloc(ctx, n);
    if (q == NULL)
        return NULL;
    void *moved = prev->realloc(prev->ctx, p, n);
    if (moved == NULL) {
        heap_free(ctx, q);
        return NULL;
    }
    memcpy(q, moved, n);
    memset(moved, HEAP_DEAD, n);
    return q;
}

/* The arenas: pymalloc's (used after the switch only by a realloc of a block from before it, whose result is
 * copied out at once) and the interpreter's frame stacks. No object is ever allocated in them, so no stale
 * object pointer can reach them: an arena freed after the switch is kept for the next of its size (a deep
 * call that crosses a frame-stack boundary in a loop frees and takes one each time). */
#define HEAP_ARENA_SIZES 16
static struct { size_t size; void *first; } heap_arenas[HEAP_ARENA_SIZES];

static void *
heap_arena_alloc(void *ctx, size_t size)
{
    heap_check_floats();
    for (int i = 0; i < HEAP_ARENA_SIZES && heap_arenas[i].size != 0; i++) {
        if (heap_arenas[i].size == size && heap_arenas[i].first != NULL) {
            void *p = heap_arenas[i].first;
            heap_arenas[i].first = *(void **)p;
            return p;
        }
    }
    return heap_take((size + HEAP_PAGE - 1) & ~(HEAP_PAGE - 1), HEAP_PAGE);  /* never counted out */
}

static void
heap_arena_free(void *ctx, void *p, size_t size)
{
    if (p == NULL)
        return;
    if (!heap_owns(p)) {
        /* An arena or frame stack from before the switch, where objects lived: emptied but never unmapped, so
         * no later mapping can take its addresses. */
        madvise(p, size, MADV_DONTNEED);
        return;
    }
    for (int i = 0; i < HEAP_ARENA_SIZES; i++) {
        if (heap_arenas[i].size == 0)
            heap_arenas[i].size = size;
        if (heap_arenas[i].size == size) {
            *(void **)p = heap_arenas[i].first;
            heap_arenas[i].first = p;
            return;
        }
    }
    /* A seventeenth size: kept out of use (its pages stay counted). */
}

/* The collector's callbacks go through a list of ours: one forwarder, which calls each callback of the list
 * `gc.callbacks` shows, as the collector does. The collector allocates the callbacks' `info` right after a
 * full collection empties the free lists (a non-empty list is enough), so the float list is closed again
 * before any Python code runs; the test can empty `gc.callbacks`, not this list (untracked, referenced only
 * from the collector's state). */
static PyObject *heap_gc_shown;  /* the list gc.callbacks is */

static PyObject *
heap_gc_forward(PyObject *self, PyObject *args)
{
    heap_check_floats();
    PyObject *callbacks = PyList_GetSlice(heap_gc_shown, 0, PY_SSIZE_T_MAX);
    if (callbacks == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(callbacks); i++) {
        PyObject *callback = PyList_GET_ITEM(callbacks, i);
        PyObject *result = PyObject_Call(callback, args, NULL);
        if (result == NULL)
            PyErr_WriteUnraisable(callback);
        Py_XDECREF(result);
    }
    Py_DECREF(callbacks);
    Py_RETURN_NONE;
}

static PyMethodDef heap_gc_forward_def = {"gc_callbacks", heap_gc_forward, METH_VARARGS,
                                          "calls each of gc.callbacks (repo2rlenv verifier)"};

static int
heap_close_floats(void)
{
#ifdef HEAP_FLOATS
    PyInterpreterState *interp = PyInterpreterState_Get();
    PyObject *forward = PyCFunction_New(&heap_gc_forward_def, NULL);
    PyObject *ours = forward == NULL ? NULL : PyList_New(1);
    if (ours == NULL) {
        Py_XDECREF(forward);
        return -1;
    }
    PyList_SET_ITEM(ours, 0, forward);
    PyObject_GC_UnTrack(ours);
    heap_gc_shown = interp->gc.callbacks;  /* its reference moves here; gc.callbacks still names it */
    interp->gc.callbacks = ours;
    heap_floats = HEAP_FLOATS_OF(interp);
    heap_pin_floats();
#endif
    return 0;
}

/* one_time_heap() -> the bytes reserved: from now on the object and memory domains and the arenas of this
 * process allocate from the one-time heap. Once per process; a fork inherits it. */
static PyObject *
one_time_heap(PyObject *self, PyObject *unused)
{
    if (heap_base != NULL)
        return PyLong_FromSize_t(HEAP_RESERVE);
    char *base = mmap(NULL, HEAP_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        return PyErr_SetFromErrno(PyExc_OSError);
    size_t counters = (HEAP_RESERVE >> HEAP_PAGE_SHIFT) * sizeof(uint16_t);
    void *live = mmap(NULL, counters, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (live == MAP_FAILED) {
        munmap(base, HEAP_RESERVE);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    heap_base = base;
    for (int i = 0; i < HEAP_LANES; i++) {
        char *start = base + (size_t)i * HEAP_SMALL_LANE;
        heap_lanes[i] = (heap_lane){start, i < HEAP_LANES - 1 ? start + HEAP_SMALL_LANE : base + HEAP_RESERVE,
                                    start, start};
    }
    heap_live = live;
    PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &heap_prev_mem);
    PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &heap_prev_obj);
    PyMemAllocatorEx mem = {&heap_prev_mem, heap_malloc, heap_calloc, heap_realloc, heap_free};
    PyMemAllocatorEx obj = {&heap_prev_obj, heap_malloc, heap_calloc, heap_realloc, heap_free};
    PyObjectArenaAllocator arena = {NULL, heap_arena_alloc, heap_arena_free};
    PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &mem);
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &obj);
    PyObject_SetArenaAllocator(&arena);
    if (heap_close_floats() < 0)
        return NULL;
    return PyLong_FromSize_t(HEAP_RESERVE);
}
