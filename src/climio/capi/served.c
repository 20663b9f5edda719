/* Server mode: the model's side of climio's I/O servers, in C11 and MPI alone (docs/serve-protocol.md).
 *
 * Each call turns into one message to this rank's server (model rank r talks to server r % S): a header of 8
 * int64, its names, its typed data. Messages are copied into this rank's buffer, a ring, back to back, and go
 * out in packets (several messages in one MPI_Isend), so write_darray returns as soon as the model may reuse
 * its array, and a step of many fields is a few large sends that the servers take while the model computes.
 * While the ring is full, a call first waits for the oldest packets (back-pressure). The servers check the
 * calls and agree on errors; a file's error comes back asynchronously and is returned by the rank's next call
 * on that file, at the latest by its closefile. Reads (openfile, inq_varid on an opened file, read_darray)
 * wait for their answer. Every wait polls and ends after CLIMIO_SERVE_TIMEOUT seconds (600) with an error
 * naming the servers: nothing waits forever. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

enum { TAG_HELLO = 7301, TAG_INTERCOMM = 7302, TAG_PACKET = 7303, TAG_REPLY = 7305, TAG_REPLY_TEXT = 7306,
       TAG_ANSWER = 7307, TAG_ANSWER_TEXT = 7308, TAG_ANSWER_DATA = 7309,
       TAG_WELCOME_TEXT = 7310 };
enum { DECOMP = 1, CREATE, DEF_DIM, DEF_VAR, PUT_ATT, DEF_COMPRESS, DEF_REDUCE, ENDDEF, WRITE, PUT_TIME, PUT_VAR,
       CLOSE, FINALIZE, OPEN, INQ_VARID, READ, PIO };
enum { NC_CHAR = 2, SYSTEM = -1, SHIFT = 16, MAXITEMS = (1 << SHIFT) - 1 };
static const int64_t MAGIC = 0x636C696D696FLL, VERSION = 3;  /* climio.serve.protocol */
static const long long PACKET_BYTES = 4LL << 20;  /* a packet is posted once it holds this much */
static const int EAGER_PACKETS = 4;                /* ... or at once while fewer packets are in flight */

/* A packet in flight: messages back to back, sent as one MPI_BYTE message. */
typedef struct packet {
    struct packet *next;
    MPI_Request request;
    long long offset;  /* in the ring; -1: one message larger than the ring, in `own` */
    char *own;
} packet;

typedef struct {
    int n;
    int ndims;
    long long grid[8];
    long long points;     /* owned points per level: this rank's map length */
    long long withhalo;   /* local points per level with the halo (= points without one) */
    int halo;
    long long count[8];   /* a block's box, to strip its halo */
    int block;
    int freed;            /* by climio_free_decomp: kept for the files that use it until the finalize */
} decomp;

typedef struct {
    char name[257];
    long long len;
} dim;

typedef struct {
    char name[257];
    int xtype;
    int ndims;
    int dimids[8];
    int deflate;
    int quantize, nsd;
} var;

typedef struct iosystem iosystem;

typedef struct {
    int n;
    iosystem *sys;
    char path[4096];
    decomp *d;
    char mode[32];
    int reading, defined;
    dim *dims;
    int ndims;
    var *vars;
    int nvars;
    int code;          /* the servers' error on this file, once it arrived */
    char *error;
    int reported;
} file;

typedef struct {
    long long ident;
    int code;
    char *text;
} reply;

struct iosystem {
    int index;
    MPI_Comm comm, inter;
    int rank, server, first, nservers;
    long long limit;
    char *ring;                    /* the client buffer (limit bytes): packets in the order sent, then the open one */
    long long head, tail;          /* the oldest live byte of the ring, and where the next message goes */
    long long open_start, open;    /* the packet being filled: its offset and bytes */
    int ring_packets, packets;     /* packets in flight: in the ring, and all */
    double timeout;
    int abort;
    packet *oldest, *newest;  /* packets in flight, in the order sent */
    int64_t reply_header[4];
    MPI_Request reply_request;
    reply *replies;
    int nreplies;
    int system_code;
    char *system_error;
    int count, finalized;
    char *lost;  /* the servers stopped answering, or this rank's memory ran out inside a message: every later */
    int lost_code;  /* call returns this code and line at once */
    decomp *decomps[MAXITEMS + 1];
    file *files[MAXITEMS + 1];
};

static iosystem *systems[1 << 13];

static void end_with_mpi(void);

/* ------------------------------------------------------------------------------------------ small things */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void pause_for(double seconds)
{
    struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&t, NULL);
}

static size_t type_size(int xtype)
{
    switch (xtype) {
    case CLIMIO_BYTE: return 1;
    case CLIMIO_SHORT: return 2;
    case CLIMIO_INT: case CLIMIO_FLOAT: return 4;
    case CLIMIO_DOUBLE: case CLIMIO_INT64: return 8;
    case NC_CHAR: return 1;
    default: return 0;
    }
}

static MPI_Datatype mpi_type(int xtype)
{
    switch (xtype) {
    case CLIMIO_BYTE: return MPI_INT8_T;
    case CLIMIO_SHORT: return MPI_INT16_T;
    case CLIMIO_INT: return MPI_INT32_T;
    case CLIMIO_FLOAT: return MPI_FLOAT;
    case CLIMIO_DOUBLE: return MPI_DOUBLE;
    case CLIMIO_INT64: return MPI_INT64_T;
    default: return MPI_BYTE;
    }
}

/* A type climio does not take, for `what` (e.g. "variable 'T'") of the file at path (climio.model.definition's
 * xtype_dtype). */
static int bad_type(const char *path, const char *what, int xtype)
{
    return climio_fail(CLIMIO_EINVAL, "%s: %s: type %d is none of CLIMIO_BYTE (1), SHORT (3), INT (4), FLOAT (5), "
                       "DOUBLE (6), INT64 (10)", path, what, xtype);
}

/* A CLIMIO_* setting from the environment, by climio.core.settings.Setting.read's rule: unset or empty is
 * `fallback`; else a plain decimal number (digits, one '.', an exponent; an integer where `integer` is set;
 * no blanks, hexadecimal, inf or nan) within [low, high] (low excluded where low_open); anything else is
 * CLIMIO_EINVAL with the line that rule gives, naming the variable and what it takes. */
static int setting(const char *name, const char *meaning, double fallback, double low, int low_open, double high,
                   int integer, const char *unset, double *value)
{
    const char *given = getenv(name);
    *value = fallback;
    if (given == NULL || *given == '\0')
        return CLIMIO_NOERR;
    const char *p = given + (*given == '+' || *given == '-');
    int digits = 0, dots = 0, exponent = 0, ok = 1;
    for (; *p && ok; p++) {
        if (*p >= '0' && *p <= '9')
            digits++;
        else if (*p == '.' && !dots && !exponent && !integer)
            dots++;
        else if ((*p == 'e' || *p == 'E') && digits && !exponent && !integer) {
            exponent = 1;
            p += p[1] == '+' || p[1] == '-';
            ok = p[1] >= '0' && p[1] <= '9';
        } else
            ok = 0;
    }
    char *end;
    double v = ok && digits ? strtod(given, &end) : 0.0;
    if (ok && digits && *end == '\0' && v == v && v - v == 0 && (low_open ? v > low : v >= low) && v <= high) {
        *value = v;
        return CLIMIO_NOERR;
    }
    char range[96], fallen[128];
    if (high < HUGE_VAL)
        snprintf(range, sizeof range, "%s %s%g to %g", integer ? "a whole number" : "a number",
                 low_open ? "greater than " : "from ", low, high);
    else
        snprintf(range, sizeof range, "%s %s%g", integer ? "a whole number" : "a number",
                 low_open ? "greater than " : "from ", low);
    if (unset)
        snprintf(fallen, sizeof fallen, "%s", unset);
    else
        snprintf(fallen, sizeof fallen, "default %g", fallback);
    return climio_fail(CLIMIO_EINVAL, "%s=%s: give %s, %s (%s)", name, given, meaning, range, fallen);
}

/* climio.core.settings.SERVE_TIMEOUT */
static int timeout_seconds(double *seconds)
{
    return setting("CLIMIO_SERVE_TIMEOUT", "the seconds a model and its I/O servers wait for each other", 600.0,
                   0.0, 1, HUGE_VAL, 0, NULL, seconds);
}

/* climio.core.settings.SERVE_BUFFER_MB */
static int buffer_megabytes(double *megabytes)
{
    return setting("CLIMIO_SERVE_BUFFER_MB", "the MiB of each model rank's buffer for the I/O servers", 32.0, 1.0,
                   0, 65536.0, 1, NULL, megabytes);
}

static void servers_name(const iosystem *s, char *out, size_t size)
{
    if (s->nservers > 1)
        snprintf(out, size, "I/O servers (world ranks %d-%d)", s->first, s->first + s->nservers - 1);
    else
        snprintf(out, size, "I/O server (world rank %d)", s->first);
}

/* An error of system s: its code, and the job's end under CLIMIO_ABORT_ON_ERROR. */
static int failed(iosystem *s, int code)
{
    if (code != CLIMIO_NOERR && s != NULL && s->abort) {
        char message[2048];
        climio_errmsg(message, (int)sizeof message);
        fprintf(stderr, "climio: %s\n", message);
        fflush(stderr);
        MPI_Abort(s->comm, code == CLIMIO_EIO || code == CLIMIO_EINTERNAL || code == CLIMIO_ENOMEM ? 1 : 2);
    }
    return code;
}

/* `bytes` of zeroed memory (or `old` grown to `bytes`), or NULL with CLIMIO_ENOMEM's line naming what for. */
static void *claim(void *old, size_t bytes, const char *what)
{
    void *p = old ? realloc(old, bytes) : calloc(1, bytes ? bytes : 1);
    if (p == NULL) {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        climio_fail(CLIMIO_ENOMEM, "out of memory: world rank %d could not allocate %zu bytes for %s: give each model "
                    "rank more memory (fewer ranks per node)", rank, bytes, what);
    }
    return p;
}

/* The connection's loss, if it is lost: its code with its line, else CLIMIO_NOERR. */
static int lost(const iosystem *s)
{
    if (!s->lost_code)
        return CLIMIO_NOERR;
    return s->lost ? climio_fail(s->lost_code, "%s", s->lost) : s->lost_code;  /* NULL: claim's line is kept */
}

/* Give the connection up with `code` and the last error's line (the servers stopped answering, or a message
 * half taken or half sent for want of memory): every later call returns them at once. */
static int lose(iosystem *s, int code)
{
    if (!s->lost_code) {
        s->lost_code = code;
        s->lost = claim(NULL, 2048, "the line of a lost connection");
        if (s->lost)
            climio_errmsg(s->lost, 2048);
    }
    return lost(s);
}

/* ------------------------------------------------------------------------------------------ the launch */

/* An error the model's program will say (the launch's one line about it): the mark of
 * climio.core.mpi.first_to_speak, so that the servers, stopped by the launcher once the model ends, add none. */
static int said(int code)
{
    const char *base = getenv("PMIX_SERVER_TMPDIR"), *job = getenv("PMIX_NAMESPACE");
    char mark[4096];
    if (base && job && snprintf(mark, sizeof mark, "%s/climio-spoke-%s", base, job) < (int)sizeof mark) {
        FILE *f = fopen(mark, "wx");
        if (f)
            fclose(f);
    }
    return code;
}

int served_said(int code)
{
    return said(code);
}

/* 1 when comm holds no rank of the launch's servers (or there are none). */
int served_holds_none(MPI_Comm comm, int first, int count)
{
    MPI_Group mine, world;
    int size, inside = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_group(comm, &mine);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int r = 0; r < size && !inside; r++) {
        int w;
        MPI_Group_translate_ranks(mine, 1, &r, world, &w);
        inside = w >= first && w < first + count;
    }
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    return !inside;
}

int served_layout(int *first, int *count)
{
    int world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    const char *given = getenv("CLIMIO_SERVERS");
    if (given != NULL && *given) {  /* climio.core.settings.servers */
        char meaning[128];
        double n;
        snprintf(meaning, sizeof meaning, "the number of I/O server ranks, the last of this launch of %d", world);
        if (setting("CLIMIO_SERVERS", meaning, 0.0, 0.0, 0, world - 1.0, 1,
                    "unset: the last application of the launch", &n))
            return said(CLIMIO_EINVAL);
        *count = (int)n;
        *first = world - (int)n;
        return n > 0;
    }
    int *appnum, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    const char *sizes = getenv("OMPI_APP_CTX_NUM_PROCS");
    if (!flag || sizes == NULL)
        return 0;
    long total = 0, last = 0;
    int contexts = 0;
    for (const char *p = sizes; *p;) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p) {
            if (*p != ' ' && *p != ',')
                return 0;
            p++;
            continue;
        }
        total += n;
        last = n;
        contexts++;
        p = end;
    }
    if (contexts < 2 || total != world || last < 1)
        return 0;
    *count = (int)last;
    *first = world - (int)last;
    return 1;
}

/* ------------------------------------------------------------------------------------------ ids */

static iosystem *system_of(int iosysid)
{
    int index = (iosysid & ~CLIMIO_SERVED_BIT) >> SHIFT;
    if ((iosysid & ((1 << SHIFT) - 1)) != 0 || index <= 0 || index >= (int)(sizeof systems / sizeof *systems))
        return NULL;
    return systems[index];
}

static int bad_system(int iosysid)
{
    return climio_fail(CLIMIO_EBADID, "no I/O system with id %d", iosysid);
}

static int id_of(const iosystem *s, int n)
{
    return CLIMIO_SERVED_BIT | s->index << SHIFT | n;
}

static int new_number(iosystem *s)
{
    if (s->count >= MAXITEMS)
        return climio_fail(CLIMIO_EINVAL, "I/O system %d: more than %d decompositions and files",
                           id_of(s, 0), MAXITEMS), 0;
    return ++s->count;
}

/* ------------------------------------------------------------------------------------------ progress */

static void take_replies(iosystem *s)
{
    int done = 1;
    while (s->reply_request != MPI_REQUEST_NULL && done) {
        MPI_Test(&s->reply_request, &done, MPI_STATUS_IGNORE);
        if (!done)
            break;
        long long ident = s->reply_header[1], size = s->reply_header[3];
        int code = (int)s->reply_header[2];
        char *text = claim(NULL, (size_t)size + 1, "a reply of the I/O servers");
        reply *replies = text ? claim(s->replies, sizeof(reply) * (size_t)(s->nreplies + 1), "the replies") : NULL;
        if (replies == NULL) {  /* its text stays untaken: no later message can be told apart */
            free(text);
            lose(s, CLIMIO_ENOMEM);
            return;
        }
        s->replies = replies;
        if (size > 0)
            MPI_Recv(text, (int)size, MPI_BYTE, s->server, TAG_REPLY_TEXT, s->inter, MPI_STATUS_IGNORE);
        if (ident == SYSTEM) {
            if (code) {
                s->system_code = code;
                s->system_error = text;
            } else
                free(text);
            s->replies[s->nreplies++] = (reply){SYSTEM, code, NULL};
            return;  /* the last reply: nothing more comes */
        }
        s->replies[s->nreplies++] = (reply){ident, code, text};
        MPI_Irecv(s->reply_header, 4, MPI_INT64_T, s->server, TAG_REPLY, s->inter, &s->reply_request);
    }
}

/* Send `bytes` at `data` as one packet: in the ring at `offset`, or (offset -1) a message of its own, `own`, freed
 * once sent. CLIMIO_ENOMEM with nothing sent when the packet cannot be kept. */
static int send_packet(iosystem *s, char *data, long long bytes, long long offset, char *own)
{
    packet *p = claim(NULL, sizeof(packet), "a packet to the I/O servers");
    if (p == NULL)
        return CLIMIO_ENOMEM;
    p->offset = offset;
    p->own = own;
    MPI_Isend(data, (int)bytes, MPI_BYTE, s->server, TAG_PACKET, s->inter, &p->request);
    if (s->newest)
        s->newest->next = p;
    else
        s->oldest = p;
    s->newest = p;
    s->ring_packets += offset >= 0;
    s->packets++;
    return CLIMIO_NOERR;
}

/* Post the packet being filled (no-op when empty): 0, or the code of the connection's loss. */
static int post(iosystem *s)
{
    if (s->open == 0 || s->lost_code)
        return lost(s);
    if (send_packet(s, s->ring + s->open_start, s->open, s->open_start, NULL))
        return lose(s, CLIMIO_ENOMEM);  /* its messages are in no packet: the servers would wait for them */
    s->open_start = s->tail;
    s->open = 0;
    return CLIMIO_NOERR;
}

/* The offset where a message of `total` bytes goes in the ring, or -1 while older packets hold the room. A
 * packet is contiguous: before the ring wraps to its start, the open packet is posted. */
static long long room(iosystem *s, long long total)
{
    if (s->ring_packets == 0 && s->open == 0)
        s->head = s->tail = s->open_start = 0;
    if (s->tail > s->head || (s->ring_packets == 0 && s->open == 0)) {  /* free: the end, then the start */
        if (s->limit - s->tail >= total)
            return s->tail;
        if (s->head < total || post(s))
            return -1;
        s->tail = s->open_start = 0;
        return 0;
    }
    return s->head - s->tail >= total ? s->tail : -1;  /* wrapped: free up to the oldest live byte */
}

/* Let go of completed packets (in the order sent) and take the replies that arrived. */
static void progress(iosystem *s)
{
    while (s->oldest) {
        int done;
        MPI_Test(&s->oldest->request, &done, MPI_STATUS_IGNORE);
        if (!done)
            break;
        packet *p = s->oldest;
        s->oldest = p->next;
        if (!s->oldest)
            s->newest = NULL;
        s->packets--;
        if (p->offset >= 0)
            s->ring_packets--;
        free(p->own);
        free(p);
        packet *next = s->oldest;  /* the oldest live byte: the next packet in the ring, else the open one */
        while (next && next->offset < 0)
            next = next->next;
        s->head = next ? next->offset : s->open_start;
    }
    take_replies(s);
}

/* Remove the temporary outputs for path (.NAME.HOST.PID.HEX.climio-tmp) of servers of this host that no longer
 * run: a server killed outright leaves its unfinished file, which nothing else would remove. */
static void remove_dead_temporaries(const char *path)
{
    char directory[4096], host[256] = "";
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    snprintf(directory, sizeof directory, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path)
        snprintf(directory, sizeof directory, "/");
    gethostname(host, sizeof host - 1);
    if (strchr(host, '.'))
        *strchr(host, '.') = '\0';
    DIR *dir = opendir(directory);
    struct dirent *entry;
    size_t n = strlen(name), h = strlen(host);
    while (dir && (entry = readdir(dir)) != NULL) {
        const char *e = entry->d_name, *end = e + strlen(e);
        if (e[0] != '.' || strncmp(e + 1, name, n) || e[n + 1] != '.' || strncmp(e + n + 2, host, h) ||
            e[n + 2 + h] != '.' || end - e < 12 || strcmp(end - 11, ".climio-tmp"))
            continue;
        long pid = strtol(e + n + 3 + h, NULL, 10);
        if (pid > 0 && kill((pid_t)pid, 0) == -1 && errno == ESRCH) {
            char stale[8192];
            snprintf(stale, sizeof stale, "%s/%s", directory, e);
            unlink(stale);
        }
    }
    if (dir)
        closedir(dir);
}

/* Poll until done(s, arg), the packet being filled posted first: MPI's own waits cannot time out. After the
 * timeout the servers count as lost. */
static int wait_for(iosystem *s, int (*done)(iosystem *, const void *), const void *arg, const char *what)
{
    double deadline = now() + s->timeout, pause = 1e-5;
    int code = post(s);  /* what the servers must see before they can answer */
    if (code)
        return code;
    progress(s);
    while (!(code = lost(s)) && !done(s, arg)) {
        if (now() > deadline) {
            char name[128];
            servers_name(s, name, sizeof name);
            said(climio_fail(CLIMIO_EIO, "%s did not take %s within %g s: check that climio serve runs (its errors "
                             "are on its stderr), or raise CLIMIO_SERVE_TIMEOUT; nothing was published", name, what,
                             s->timeout));
            lose(s, CLIMIO_EIO);
            for (int n = 1; n <= s->count && s->rank == 0; n++)
                if (s->files[n] && !s->files[n]->reading)
                    remove_dead_temporaries(s->files[n]->path);
            return CLIMIO_EIO;
        }
        pause_for(pause);
        pause = pause < 5e-3 ? 2 * pause : 1e-2;
        progress(s);
    }
    return code;
}

static int oldest_sent(iosystem *s, const void *oldest)
{
    return s->oldest != oldest;
}

static int all_sent(iosystem *s, const void *unused)
{
    (void)unused;
    return s->oldest == NULL;
}

/* Post what is in the ring and wait until the packets in flight are fewer: room for the next message. */
static int make_room(iosystem *s)
{
    int code = post(s);
    if (code)
        return code;
    return s->oldest ? wait_for(s, oldest_sent, s->oldest, "the data sent before (the client buffer is full)")
                    : climio_fail(CLIMIO_EINTERNAL, "climio: the client buffer is empty and yet has no room");
}

static int has_reply(iosystem *s, const void *ident)
{
    long long wanted = *(const long long *)ident;
    if (s->system_error)
        return 1;
    for (int i = 0; i < s->nreplies; i++)
        if (s->replies[i].ident == wanted)
            return 1;
    return 0;
}

/* Take the reply about ident, if it came: 1 with its code and text (the caller frees it), else 0. */
static int pop_reply(iosystem *s, long long ident, int *code, char **text)
{
    for (int i = 0; i < s->nreplies; i++)
        if (s->replies[i].ident == ident) {
            *code = s->replies[i].code;
            *text = s->replies[i].text;
            s->replies[i] = s->replies[--s->nreplies];
            return 1;
        }
    return 0;
}

/* ------------------------------------------------------------------------------------------ sending */

/* A typed buffer of a message; with `haloed` set, data is a block's halo'd local array of `rows` rows whose owned
 * points (count of them) are what is sent, copied straight into the message. */
typedef struct {
    const void *data;
    long long count;
    int xtype;
    const decomp *haloed;
    long long rows;
} buffer;

static void halo_copy(const decomp *d, long long rows, char *haloed, char *packed, size_t size, const void *fill);

static size_t aligned(size_t bytes)
{
    return (bytes + 7) & ~(size_t)7;
}

/* Send one message without waiting for the server: its data are copied first. */
static int send(iosystem *s, int kind, long long ident, const long long args[5], const char *const *names,
                int nnames, const buffer *buffers, int nbuffers)
{
    if (s->finalized)
        return climio_fail(CLIMIO_EBADID, "I/O system %d was finalized", id_of(s, 0));
    size_t text = 0, bytes = 64;
    for (int i = 0; i < nnames; i++)
        text += strlen(names[i]) + 1;
    bytes += aligned(text);
    for (int i = 0; i < nbuffers; i++)
        bytes += aligned((size_t)buffers[i].count * type_size(buffers[i].xtype));
    long long total = (long long)bytes, at;
    char *into;
    progress(s);
    int code = lost(s);
    if (total > s->limit) {  /* one message larger than the ring: alone, once everything before it is sent */
        if (!code)
            code = post(s);
        if (!code && s->oldest)
            code = wait_for(s, all_sent, NULL, "the data sent before (a message larger than the client buffer)");
        if (code)
            return code;
        if ((into = claim(NULL, (size_t)total, "a message larger than the client buffer")) == NULL)
            return CLIMIO_ENOMEM;
    } else {
        const char *ring = "the client buffer (or a smaller one: CLIMIO_SERVE_BUFFER_MB, climio_init_servers' "
                           "buffer_bytes)";
        if (!code && s->ring == NULL && (s->ring = claim(NULL, (size_t)s->limit, ring)) == NULL)
            code = CLIMIO_ENOMEM;
        while (!code && (at = room(s, total)) < 0)
            code = make_room(s);
        if (code)
            return code;
        into = s->ring + at;
    }
    int64_t header[8] = {kind, ident, 0, 0, 0, 0, 0, (int64_t)text};
    for (int i = 0; i < 5 && args; i++)
        header[2 + i] = args[i];
    memcpy(into, header, sizeof header);
    char *out = into + sizeof header;
    for (int i = 0; i < nnames; i++) {
        size_t n = strlen(names[i]) + 1;
        memcpy(out, names[i], n);
        out += n;
    }
    memset(out, 0, (size_t)(into + 64 + aligned(text) - out));  /* the text's padding */
    out = into + 64 + aligned(text);
    for (int i = 0; i < nbuffers; i++) {
        size_t n = (size_t)buffers[i].count * type_size(buffers[i].xtype);
        if (n && buffers[i].haloed)
            halo_copy(buffers[i].haloed, buffers[i].rows, (char *)buffers[i].data, out, type_size(buffers[i].xtype),
                      NULL);
        else if (n)
            memcpy(out, buffers[i].data, n);
        memset(out + n, 0, aligned(n) - n);
        out += aligned(n);
    }
    if (total > s->limit) {
        code = send_packet(s, into, total, -1, into);
        if (code)
            free(into);
        return code;
    }
    s->tail = (into - s->ring) + total;
    s->open += total;
    return s->open >= PACKET_BYTES || s->packets < EAGER_PACKETS ? post(s) : CLIMIO_NOERR;
}

/* The servers' error on the connection, if one came. */
static int system_check(iosystem *s)
{
    progress(s);
    int code = lost(s);
    if (code)
        return code;
    if (s->system_error) {
        climio_keep_error(s->system_error);
        return s->system_code;
    }
    if (s->finalized)
        return climio_fail(CLIMIO_EBADID, "I/O system %d was finalized", id_of(s, 0));
    return CLIMIO_NOERR;
}

/* ------------------------------------------------------------------------------------------ connecting */

/* Whether a receive completed. */
static int acked(iosystem *s, const void *request)
{
    (void)s;
    int done;
    MPI_Test((MPI_Request *)request, &done, MPI_STATUS_IGNORE);
    return done;
}

/* The settings of every rank of the model, agreed: CLIMIO_NOERR, or the first refusing rank's code and line on
 * every rank (climio.serve.connect.connect does the same). */
static int agreed_settings(MPI_Comm comm, int rank, double *seconds, double *megabytes)
{
    int code = timeout_seconds(seconds);
    if (!code)
        code = buffer_megabytes(megabytes);
    int size, first;
    MPI_Comm_size(comm, &size);
    int mine = code ? rank : size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size)
        return CLIMIO_NOERR;
    char line[1024];
    climio_errmsg(line, (int)sizeof line);
    MPI_Bcast(&code, 1, MPI_INT, first, comm);
    MPI_Bcast(line, (int)sizeof line, MPI_CHAR, first, comm);
    return climio_fail(code, "%s", line);
}

void served_refuse(MPI_Comm comm, MPI_Comm peer, int first, int code)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank == 0) {
        int64_t hello[4] = {MAGIC, VERSION, size, code};
        MPI_Send(hello, 4, MPI_INT64_T, first, TAG_HELLO, peer);
    }
}

int served_init(MPI_Comm comm, long long buffer_bytes, int *iosysid)
{
    int first, count;
    *iosysid = -1;
    if (served_layout(&first, &count) <= 0)
        return climio_fail(CLIMIO_EINVAL, "climio: no I/O servers in this launch");
    return served_init_peer(comm, MPI_COMM_WORLD, first, count, buffer_bytes, iosysid);
}

int served_init_peer(MPI_Comm comm, MPI_Comm peer, int first, int count, long long buffer_bytes, int *iosysid)
{
    *iosysid = -1;
    int index = 1;
    while (index < (int)(sizeof systems / sizeof *systems) && systems[index])
        index++;
    if (index == (int)(sizeof systems / sizeof *systems))
        return climio_fail(CLIMIO_EINVAL, "climio: too many I/O systems");
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    double seconds = 600.0, megabytes = 32.0;
    int refused = agreed_settings(comm, rank, &seconds, &megabytes);
    iosystem *s = calloc(1, sizeof(iosystem));
    if (s == NULL) {
        refused = refused ? refused : climio_fail(CLIMIO_EIO, "climio: out of memory for an I/O system");
        if (rank == 0) {  /* the servers still learn that the model gives up, and end quietly */
            int64_t hello[4] = {MAGIC, VERSION, size, refused};
            MPI_Send(hello, 4, MPI_INT64_T, first, TAG_HELLO, peer);
        }
        return refused;
    }
    s->index = index;
    s->comm = comm;
    s->first = first;
    s->nservers = count;
    s->timeout = seconds;
    s->reply_request = MPI_REQUEST_NULL;
    s->limit = buffer_bytes > 0 ? buffer_bytes : (long long)megabytes << 20;
    s->ring = malloc((size_t)s->limit);  /* made and touched now, so that no step pays its page faults; if it */
    if (s->ring != NULL)                 /* cannot be, the first message asks again and names the shortage */
        memset(s->ring, 0, (size_t)s->limit);
    s->rank = rank;
    /* The hello: the model's leader tells the first server the model's size (or that the model refused its own
     * settings) and waits for its answer, so that a last application that is no climio serve ends in an error,
     * not in MPI_Intercomm_create forever, and a server that refuses its own is heard at once. */
    int64_t answer[5] = {0, 0, 0, 0, 0};
    char line[1024] = "";
    if (s->rank == 0) {
        int64_t hello[4] = {MAGIC, VERSION, size, refused};
        MPI_Request request;
        MPI_Send(hello, 4, MPI_INT64_T, first, TAG_HELLO, peer);
        if (!refused) {
            MPI_Irecv(answer, 5, MPI_INT64_T, first, TAG_HELLO, peer, &request);
            if (wait_for(s, acked, &request, "the hello") != CLIMIO_NOERR) {
                MPI_Cancel(&request);
                MPI_Request_free(&request);
                answer[0] = 0;
            } else if (answer[4] > 0) {
                int bytes = answer[4] < (int64_t)sizeof line - 1 ? (int)answer[4] : (int)sizeof line - 1;
                char *text = malloc((size_t)answer[4]);
                if (text)
                    MPI_Recv(text, (int)answer[4], MPI_BYTE, first, TAG_WELCOME_TEXT, peer,
                             MPI_STATUS_IGNORE);
                snprintf(line, sizeof line, "%.*s", text ? bytes : 0, text ? text : "");
                free(text);
            }
        }
    }
    if (refused) {
        free(s->lost);
        free(s->ring);
        free(s);
        return said(refused);
    }
    MPI_Bcast(answer, 5, MPI_INT64_T, 0, comm);
    MPI_Bcast(line, (int)sizeof line, MPI_CHAR, 0, comm);
    if (answer[0] != MAGIC || answer[1] != VERSION || answer[3]) {
        char name[128];
        servers_name(s, name, sizeof name);
        free(s->lost);
        free(s->ring);
        free(s);
        if (answer[0] && answer[1] != VERSION)
            return climio_fail(CLIMIO_EINVAL, "climio serve speaks protocol version %lld, this libclimio %lld: use "
                               "one climio for both", (long long)answer[1], (long long)VERSION);
        if (answer[0])  /* the servers refused their own options or settings: their line */
            return said(climio_fail(answer[3] == 1 ? CLIMIO_EIO : CLIMIO_EINVAL, "%s", line));
        return climio_fail(CLIMIO_EIO, "%s did not answer within %g s: start climio serve as the last application, "
                           "or set CLIMIO_SERVERS=0 for a launch without it", name, seconds);
    }
    MPI_Intercomm_create(comm, 0, peer, first, TAG_INTERCOMM, &s->inter);
    int remote;
    MPI_Comm_remote_size(s->inter, &remote);
    s->nservers = remote;
    s->server = s->rank % remote;
    MPI_Irecv(s->reply_header, 4, MPI_INT64_T, s->server, TAG_REPLY, s->inter, &s->reply_request);
    systems[index] = s;
    end_with_mpi();
    *iosysid = id_of(s, 0);
    return CLIMIO_NOERR;
}

int served_set_error_handling(int iosysid, int method)
{
    iosystem *s = system_of(iosysid);
    if (s == NULL)
        return bad_system(iosysid);
    if (method != CLIMIO_RETURN_ERROR && method != CLIMIO_ABORT_ON_ERROR)
        return failed(s, climio_fail(CLIMIO_EINVAL, "error handling %d: use CLIMIO_RETURN_ERROR (0) or "
                                     "CLIMIO_ABORT_ON_ERROR (1)", method));
    s->abort = method == CLIMIO_ABORT_ON_ERROR;
    return CLIMIO_NOERR;
}

static void free_file(file *f)
{
    f->sys->files[f->n] = NULL;
    free(f->dims);
    free(f->vars);
    free(f->error);
    free(f);
}

static int finish(iosystem *s, int discard);

int served_finalize(int iosysid)
{
    iosystem *s = system_of(iosysid);
    return s == NULL ? bad_system(iosysid) : finish(s, 0);
}

/* At MPI_Finalize (whose first act is to delete MPI_COMM_SELF's attributes): a connection the model never
 * finalized is ended, its open files discarded, so that the servers end with the model instead of waiting for
 * it until their timeout. Quiet: the model has said what it had to. */
static int at_mpi_finalize(MPI_Comm self, int key, void *value, void *extra)
{
    (void)self, (void)key, (void)value, (void)extra;
    for (int i = 1; i < (int)(sizeof systems / sizeof *systems); i++)
        if (systems[i] && !systems[i]->finalized && !systems[i]->lost_code) {
            systems[i]->abort = 0;
            finish(systems[i], 1);
        }
    return MPI_SUCCESS;
}

/* Call at_mpi_finalize at MPI_Finalize (once per process). */
static void end_with_mpi(void)
{
    static int key = MPI_KEYVAL_INVALID;
    if (key != MPI_KEYVAL_INVALID)
        return;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_mpi_finalize, &key, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL);
}

/* End the connection: FINALIZE (discard: the model's open files are not published), the servers' last reply,
 * the last data sent, and the errors not returned yet. */
static int finish(iosystem *s, int discard)
{
    int code = system_check(s);
    if (code)
        return failed(s, code);
    long long ident = SYSTEM, args[5] = {discard, 0, 0, 0, 0};
    code = send(s, FINALIZE, 0, args, NULL, 0, NULL, 0);
    if (!code)
        code = wait_for(s, has_reply, &ident, "the finalize");
    if (!code)
        code = wait_for(s, all_sent, NULL, "the last data");
    if (code)
        return failed(s, code);
    s->finalized = 1;
    MPI_Comm_free(&s->inter);
    if (s->system_error) {
        climio_keep_error(s->system_error);
        code = s->system_code;
    }
    for (int n = 1; n <= s->count; n++) {  /* a file's error not returned yet */
        file *f = s->files[n];
        int reply_code;
        char *text = NULL;
        if (f && !code && !f->error && pop_reply(s, n, &reply_code, &text) && reply_code) {
            climio_keep_error(text);
            code = reply_code;
        }
        free(text);
        if (f && f->error && !f->reported && !code) {
            climio_keep_error(f->error);
            code = f->code;
        }
        if (f)
            free_file(f);
        free(s->decomps[n]);
    }
    for (int i = 0; i < s->nreplies; i++)
        free(s->replies[i].text);
    free(s->replies);
    free(s->system_error);
    free(s->ring);
    systems[s->index] = NULL;
    code = failed(s, code);  /* under CLIMIO_ABORT_ON_ERROR, the job ends here */
    free(s);
    return code;
}

/* ------------------------------------------------------------------------------------------ decompositions */

/* The first rank's error among the model's ranks, on every rank (for arguments that differ between ranks). */
static int agree(iosystem *s, int code)
{
    int size, first;
    MPI_Comm_size(s->comm, &size);
    first = code ? s->rank : size;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, s->comm);
    if (first == size)
        return CLIMIO_NOERR;
    char message[2048];
    climio_errmsg(message, (int)sizeof message);
    MPI_Bcast(&code, 1, MPI_INT, first, s->comm);
    MPI_Bcast(message, (int)sizeof message, MPI_CHAR, first, s->comm);
    climio_keep_error(message);
    return code;
}

static int send_decomp(iosystem *s, decomp *d, const long long *compmap, int *ioid)
{
    long long args[5] = {d->ndims, d->points, 0, 0, 0};
    buffer buffers[2] = {{d->grid, d->ndims, CLIMIO_INT64, NULL, 0}, {compmap, d->points, CLIMIO_INT64, NULL, 0}};
    int code = send(s, DECOMP, d->n, args, NULL, 0, buffers, 2);
    if (code) {
        free(d);
        return failed(s, code);
    }
    s->decomps[d->n] = d;
    *ioid = id_of(s, d->n);
    return CLIMIO_NOERR;
}

static int decomp_of(iosystem *s, int ioid, decomp **out);

/* A new decomposition of the grid once the ranks agree that none has an error (`code`: this rank's, replaced
 * by the agreed one; memory a rank lacks is one), or NULL. */
static decomp *new_decomp(iosystem *s, int *code, int ndims, const long long *gdimlen)
{
    decomp *d = NULL;
    if (!*code && (d = claim(NULL, sizeof(decomp), "a decomposition")) == NULL)
        *code = CLIMIO_ENOMEM;
    *code = agree(s, *code);
    if (!*code && !(d->n = new_number(s)))
        *code = CLIMIO_EINVAL;
    if (*code) {
        free(d);
        return NULL;
    }
    d->ndims = ndims;
    for (int a = 0; a < ndims; a++)
        d->grid[a] = gdimlen[a];
    return d;
}

static int check_grid(iosystem *s, int ndims, const long long *gdimlen, const char *call)
{
    if (ndims < 1 || ndims > 8)
        return climio_fail(CLIMIO_EINVAL, "%s: a grid of %d dimensions: give 1 to 8", call, ndims);
    for (int a = 0; a < ndims; a++)
        if (gdimlen[a] < 1)
            return climio_fail(CLIMIO_EINVAL, "%s: grid length %lld of dimension %d must be positive", call,
                               gdimlen[a], a);
    (void)s;
    return CLIMIO_NOERR;
}

int served_init_decomp_blocks(int iosysid, int ndims, const long long *gdimlen, const long long *start,
                              const long long *count, int halo, int *ioid)
{
    iosystem *s = system_of(iosysid);
    *ioid = -1;
    if (s == NULL)
        return bad_system(iosysid);
    int code = system_check(s);
    if (!code)
        code = check_grid(s, ndims, gdimlen, "climio_init_decomp_blocks");
    for (int a = 0; !code && a < ndims; a++)
        if (start[a] < 0 || count[a] < 0 || start[a] + count[a] > gdimlen[a])
            code = climio_fail(CLIMIO_EINVAL, "climio_init_decomp_blocks: box start %lld count %lld along dimension "
                               "%d on rank %d lies outside the grid's %lld (0-based, C order)", start[a], count[a],
                               a, s->rank, gdimlen[a]);
    if (!code && halo < 0)
        code = climio_fail(CLIMIO_EINVAL, "climio_init_decomp_blocks: halo %d must be >= 0", halo);
    long long points = 1, *compmap = NULL;
    for (int a = 0; !code && a < ndims; a++)
        points *= count[a];
    if (!code && (compmap = claim(NULL, sizeof(long long) * (size_t)points, "a decomposition's map")) == NULL)
        code = CLIMIO_ENOMEM;
    decomp *d = new_decomp(s, &code, ndims, gdimlen);
    if (d == NULL) {
        free(compmap);
        return failed(s, code);
    }
    d->block = 1;
    d->halo = halo;
    d->points = points;
    d->withhalo = 1;
    for (int a = 0; a < ndims; a++) {
        d->count[a] = count[a];
        d->withhalo *= count[a] + (a >= ndims - 2 ? 2 * halo : 0);  /* the halo: the last two axes */
    }
    long long index[8] = {0};
    for (long long k = 0; k < d->points; k++) {  /* the box's points in C order, as 1-based grid offsets */
        long long offset = 0;
        for (int a = 0; a < ndims; a++)
            offset = offset * gdimlen[a] + start[a] + index[a];
        compmap[k] = offset + 1;
        for (int a = ndims - 1; a >= 0; a--) {
            if (++index[a] < count[a])
                break;
            index[a] = 0;
        }
    }
    code = send_decomp(s, d, compmap, ioid);
    free(compmap);
    return code;
}

int served_init_decomp(int iosysid, int ndims, const long long *gdimlen, long long maplen,
                       const long long *compmap, int *ioid)
{
    iosystem *s = system_of(iosysid);
    *ioid = -1;
    if (s == NULL)
        return bad_system(iosysid);
    int code = system_check(s);
    if (!code)
        code = check_grid(s, ndims, gdimlen, "climio_init_decomp");
    if (!code && maplen < 0)
        code = climio_fail(CLIMIO_EINVAL, "climio_init_decomp: map length %lld on rank %d must be >= 0", maplen,
                           s->rank);
    decomp *d = new_decomp(s, &code, ndims, gdimlen);
    if (d == NULL)
        return failed(s, code);
    d->points = d->withhalo = maplen;
    return send_decomp(s, d, compmap, ioid);
}

int served_free_decomp(int iosysid, int ioid)
{
    iosystem *s = system_of(iosysid);
    if (s == NULL)
        return bad_system(iosysid);
    int code = system_check(s);
    if (code)
        return failed(s, code);
    decomp *d;
    code = decomp_of(s, ioid, &d);
    if (code)
        return failed(s, code);
    d->freed = 1;  /* the servers keep theirs until the finalize */
    return CLIMIO_NOERR;
}

/* ------------------------------------------------------------------------------------------ files */

/* The file of ncid, with the servers' error on it returned once (later calls: EBADID). */
static int file_of(int ncid, file **out)
{
    iosystem *s = system_of(ncid & ~((1 << SHIFT) - 1));
    int n = ncid & ((1 << SHIFT) - 1);
    *out = NULL;
    if (s == NULL || !s->files[n])
        return climio_fail(CLIMIO_EBADID, "no open file with id %d", ncid);
    file *f = s->files[n];
    int code = system_check(s);
    if (code)
        return failed(s, code);
    char *text;
    if (!f->error && pop_reply(s, n, &code, &text)) {
        f->code = code ? code : CLIMIO_EINTERNAL;
        f->error = text;
    }
    if (f->error && !f->reported) {
        f->reported = 1;
        climio_keep_error(f->error);
        return failed(s, f->code);
    }
    if (f->error)
        return failed(s, climio_fail(CLIMIO_EBADID, "%s: abandoned after an earlier error (%s)", f->path, f->error));
    *out = f;
    return CLIMIO_NOERR;
}

static int decomp_of(iosystem *s, int ioid, decomp **out)
{
    int n = ioid & ((1 << SHIFT) - 1);
    if (!CLIMIO_SERVED(ioid) || system_of(ioid & ~((1 << SHIFT) - 1)) != s || !s->decomps[n] || s->decomps[n]->freed)
        return climio_fail(CLIMIO_EBADID, "no decomposition with id %d in I/O system %d", ioid, id_of(s, 0));
    *out = s->decomps[n];
    return CLIMIO_NOERR;
}

/* A new file (its number taken first, as on every rank), or NULL with the code in *code. */
static file *new_file(iosystem *s, decomp *d, const char *path, int *code)
{
    int n = new_number(s);
    file *f = n ? claim(NULL, sizeof(file), "an open file") : NULL;
    if (f == NULL) {
        *code = n ? CLIMIO_ENOMEM : CLIMIO_EINVAL;
        return NULL;
    }
    f->n = n;
    f->sys = s;
    f->d = d;
    snprintf(f->path, sizeof f->path, "%s", path);
    s->files[n] = f;
    return f;
}

/* The I/O system and decomposition of a new file at path, checked (0 or an error code; *s NULL: no system). */
static int file_source(int iosysid, int ioid, const char *path, iosystem **s, decomp **d)
{
    *s = system_of(iosysid);
    if (*s == NULL)
        return bad_system(iosysid);
    int code = system_check(*s);
    if (!code)
        code = decomp_of(*s, ioid, d);
    if (!code && strlen(path) >= 4096)
        code = climio_fail(CLIMIO_EINVAL, "%.200s...: a path of over 4095 bytes", path);
    return code;
}

int served_createfile(int iosysid, int ioid, int *ncid, const char *mode, const char *strategy, const char *path,
                      int flags)
{
    iosystem *s;
    decomp *d;
    *ncid = -1;
    int code = file_source(iosysid, ioid, path, &s, &d);
    if (!code && flags != CLIMIO_CLOBBER && flags != CLIMIO_NOCLOBBER)
        code = climio_fail(CLIMIO_EINVAL, "%s: flags %d: use CLIMIO_CLOBBER (0) or CLIMIO_NOCLOBBER (1)", path,
                           flags);
    if (code)
        return s ? failed(s, code) : code;
    file *f = new_file(s, d, path, &code);
    if (f == NULL)
        return failed(s, code);
    snprintf(f->mode, sizeof f->mode, "%s", mode);
    long long args[5] = {d->n, flags, 0, 0, 0};
    const char *names[3] = {path, mode, strategy};
    code = send(s, CREATE, f->n, args, names, 3, NULL, 0);
    if (code) {
        free_file(f);
        return failed(s, code);
    }
    *ncid = id_of(s, f->n);
    return CLIMIO_NOERR;
}

/* Wait for the answer to the request just sent (header: ok/error, value, code, text bytes; then the text):
 * its value (and, given `fill`, the word that carries a READ's fill value), or an error code with the servers'
 * message. */
static int await_header(iosystem *s, const char *what, int64_t header[4]);

static int await_answer(iosystem *s, const char *what, long long *value, int64_t *fill)
{
    int64_t header[4];
    int code = await_header(s, what, header);
    if (code)
        return code;
    *value = header[1];
    if (fill)
        *fill = header[2];
    return header[0] ? (header[2] ? (int)header[2] : CLIMIO_EINTERNAL) : CLIMIO_NOERR;
}

int served_openfile(int iosysid, int ioid, int *ncid, const char *strategy, const char *path)
{
    iosystem *s;
    decomp *d;
    *ncid = -1;
    int code = file_source(iosysid, ioid, path, &s, &d);
    if (code)
        return s ? failed(s, code) : code;
    file *f = new_file(s, d, path, &code);
    if (f == NULL)
        return failed(s, code);
    f->reading = 1;
    long long args[5] = {d->n, 0, 0, 0, 0}, value;
    const char *names[2] = {path, strategy};
    code = send(s, OPEN, f->n, args, names, 2, NULL, 0);
    if (!code)
        code = await_answer(s, "the open", &value, NULL);
    if (code) {
        free_file(f);
        return failed(s, code);
    }
    *ncid = id_of(s, f->n);
    return CLIMIO_NOERR;
}

int served_closefile(int ncid)
{
    file *f;
    iosystem *s = system_of(ncid & ~((1 << SHIFT) - 1));
    int n = ncid & ((1 << SHIFT) - 1);
    if (s && s->files[n] && s->files[n]->reported) {  /* abandoned, its error returned: just released */
        free_file(s->files[n]);
        return CLIMIO_NOERR;
    }
    int code = file_of(ncid, &f);
    if (code) {
        if (s && s->files[n] && s->files[n]->reported)
            free_file(s->files[n]);
        return code;
    }
    long long args[5] = {0, 0, 0, 0, 0}, ident = f->n;
    code = send(s, CLOSE, f->n, args, NULL, 0, NULL, 0);
    char what[4200];
    snprintf(what, sizeof what, "the close of %s", f->path);
    if (!code)
        code = wait_for(s, has_reply, &ident, what);
    if (!code && s->system_error) {
        climio_keep_error(s->system_error);
        code = s->system_code;
    }
    char *text = NULL;
    int reply_code = 0;
    if (!code && pop_reply(s, f->n, &reply_code, &text) && reply_code) {
        climio_keep_error(text);
        code = reply_code;
    }
    free(text);
    free_file(f);
    return failed(s, code);
}

/* A call this rank refuses itself (a variable id, memory type or frame of its own): it still sends the call, as
 * -kind with its code and message, so that the servers stay in step and fail the file on every rank with this
 * message; here the error is returned at once and the file is abandoned. */
static int refuse(file *f, int kind, int code)
{
    char message[2048];
    climio_errmsg(message, (int)sizeof message);
    long long args[5] = {code, 0, 0, 0, 0};
    const char *text = message;
    int sent = send(f->sys, -kind, f->n, args, &text, 1, NULL, 0);
    long long value;
    if (!sent && (kind == READ || kind == INQ_VARID))  /* the servers answer every rank: take it */
        sent = await_answer(f->sys, "the refused call", &value, NULL) == CLIMIO_EINTERNAL ? CLIMIO_EINTERNAL : 0;
    if (!f->reading) {  /* reads abandon no file: the servers answer, and the file stays open */
        free(f->error);
        if ((f->error = claim(NULL, strlen(message) + 1, "an error's line")) != NULL)  /* NULL: the reply brings it */
            strcpy(f->error, message);
        f->code = code;
        f->reported = 1;
    }
    climio_keep_error(message);
    return failed(f->sys, sent ? sent : code);
}

/* Send a call on file f being written. A message this rank has no memory for (none of it sent, the connection
 * intact) is refused instead, so that every rank gets the error. */
static int send_on(file *f, int kind, const long long args[5], const char *const *names, int nnames,
                   const buffer *buffers, int nbuffers)
{
    int code = send(f->sys, kind, f->n, args, names, nnames, buffers, nbuffers);
    return code == CLIMIO_ENOMEM && !f->sys->lost_code ? refuse(f, kind, code) : failed(f->sys, code);
}

/* ------------------------------------------------------------------------------------------ definitions */

/* A name netCDF does not take (climio.model.definition's check_name). */
static int bad_name(const char *name, const char *path, const char *what)
{
    size_t n = strlen(name);
    if (n == 0 || n > 256 || strchr(name, '/') || name[0] == ' ' || name[n - 1] == ' ')
        return climio_fail(CLIMIO_EINVAL, "%s: %s name '%s': give 1 to 256 characters, no '/' and no edge spaces",
                           path, what, name);
    return CLIMIO_NOERR;
}

/* The file of a definition call: open, writable and still being defined. */
static int defining(int ncid, const char *call, file **f)
{
    int code = file_of(ncid, f);
    if (code)
        return code;
    if ((*f)->reading || (*f)->defined)
        return failed((*f)->sys, climio_fail(CLIMIO_ESTATE, "%s: %s after climio_enddef (or on a file opened for "
                                             "reading)", (*f)->path, call));
    return CLIMIO_NOERR;
}

/* The variable of varid, or an error code (with its message kept). */
static int variable(file *f, int varid, var **v)
{
    if (varid < 0 || varid >= f->nvars)
        return climio_fail(CLIMIO_EBADID, "%s: no variable id %d (it has %d: 0..%d)", f->path, varid, f->nvars,
                           f->nvars - 1);
    *v = &f->vars[varid];
    return CLIMIO_NOERR;
}

static int type_of(file *f, const char *what, const char *name, int xtype)
{
    if (xtype == NC_CHAR || !type_size(xtype)) {
        char where[300];
        snprintf(where, sizeof where, "%s '%s'", what, name);
        return bad_type(f->path, where, xtype);
    }
    return CLIMIO_NOERR;
}

int served_def_dim(int ncid, const char *name, long long len, int *dimid)
{
    file *f;
    int code = defining(ncid, "climio_def_dim", &f);
    if (code)
        return code;
    code = bad_name(name, f->path, "dimension");
    for (int i = 0; !code && i < f->ndims; i++)
        if (!strcmp(f->dims[i].name, name))
            code = climio_fail(CLIMIO_EINVAL, "%s: dimension '%s' is already defined", f->path, name);
    for (int i = 0; !code && i < f->ndims; i++)
        if (len == CLIMIO_UNLIMITED && f->dims[i].len == CLIMIO_UNLIMITED)
            code = climio_fail(CLIMIO_EINVAL, "%s: dimension '%s': a second CLIMIO_UNLIMITED one", f->path, name);
    if (!code && len < 0)
        code = climio_fail(CLIMIO_EINVAL, "%s: dimension '%s': length %lld is negative", f->path, name, len);
    dim *dims = NULL;
    if (!code && (dims = claim(f->dims, sizeof(dim) * (size_t)(f->ndims + 1), "a file's dimensions")) == NULL)
        code = CLIMIO_ENOMEM;
    if (code)
        return refuse(f, DEF_DIM, code);
    f->dims = dims;
    long long args[5] = {len, 0, 0, 0, 0};
    code = send_on(f, DEF_DIM, args, &name, 1, NULL, 0);
    if (code)
        return code;
    snprintf(f->dims[f->ndims].name, sizeof f->dims[f->ndims].name, "%s", name);
    f->dims[f->ndims].len = len;
    *dimid = f->ndims++;
    return CLIMIO_NOERR;
}

int served_def_var(int ncid, const char *name, int xtype, int ndims, const int *dimids, int *varid)
{
    file *f;
    int code = defining(ncid, "climio_def_var", &f);
    if (code)
        return code;
    code = bad_name(name, f->path, "variable");
    for (int i = 0; !code && i < f->nvars; i++)
        if (!strcmp(f->vars[i].name, name))
            code = climio_fail(CLIMIO_EINVAL, "%s: variable '%s' is already defined", f->path, name);
    if (!code)
        code = type_of(f, "variable", name, xtype);
    if (!code && (ndims < 0 || ndims > 8))
        code = climio_fail(CLIMIO_EINVAL, "%s: variable '%s': %d dimensions (0 to 8)", f->path, name, ndims);
    for (int i = 0; !code && i < ndims; i++)
        if (dimids[i] < 0 || dimids[i] >= f->ndims)
            code = climio_fail(CLIMIO_EBADID, "%s: variable '%s': no dimension id %d (0..%d)", f->path, name,
                               dimids[i], f->ndims - 1);
    var *vars = NULL;
    if (!code && (vars = claim(f->vars, sizeof(var) * (size_t)(f->nvars + 1), "a file's variables")) == NULL)
        code = CLIMIO_ENOMEM;
    if (code)
        return refuse(f, DEF_VAR, code);
    f->vars = vars;
    long long ids[8], args[5] = {xtype, ndims, 0, 0, 0};
    for (int i = 0; i < ndims; i++)
        ids[i] = dimids[i];
    buffer data = {.data = ids, .count = ndims, .xtype = CLIMIO_INT64};
    code = send_on(f, DEF_VAR, args, &name, 1, &data, 1);
    if (code)
        return code;
    var *v = &f->vars[f->nvars];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->xtype = xtype;
    v->ndims = ndims;
    memcpy(v->dimids, dimids, sizeof(int) * (size_t)ndims);
    *varid = f->nvars++;
    return CLIMIO_NOERR;
}

/* The variable of a compression call, in a mode that compresses: its error code otherwise. */
static int compressible(file *f, int varid, var **v, const char *what)
{
    int code = variable(f, varid, v);
    if (!code && strcmp(f->mode, "hdf5") && strcmp(f->mode, "hdf5-classic"))
        code = climio_fail(CLIMIO_EINVAL, "%s: variable '%s': %s needs mode hdf5, not '%s'", f->path, (*v)->name,
                           what, f->mode);
    return code;
}

/* A variable's compression, whole: deflate and quantization travel together. */
static int send_compression(file *f, int varid, const var *v)
{
    long long args[5] = {varid, v->deflate, v->quantize, v->nsd, 0};
    return send_on(f, DEF_COMPRESS, args, NULL, 0, NULL, 0);
}

int served_def_var_deflate(int ncid, int varid, int shuffle, int deflate, int level)
{
    file *f;
    var *v;
    int code = defining(ncid, "climio_def_var_deflate", &f);
    if (code)
        return code;
    code = compressible(f, varid, &v, "compression");
    if (!code && deflate && (level < 1 || level > 9))
        code = climio_fail(CLIMIO_EINVAL, "%s: variable '%s': deflate level %d is not 1..9", f->path, v->name, level);
    if (!code && deflate && !shuffle)
        code = climio_fail(CLIMIO_EINVAL, "%s: variable '%s': climio deflates with the shuffle filter: pass "
                           "shuffle 1", f->path, v->name);
    if (code)
        return refuse(f, DEF_COMPRESS, code);
    v->deflate = deflate ? level : 0;
    return send_compression(f, varid, v);
}

int served_def_var_quantize(int ncid, int varid, int quantize_mode, int nsd)
{
    file *f;
    var *v;
    int code = defining(ncid, "climio_def_var_quantize", &f);
    if (code)
        return code;
    code = compressible(f, varid, &v, "quantization");
    if (!code && (quantize_mode < 1 || quantize_mode > 3 || nsd < 1 ||
                  (v->xtype != CLIMIO_FLOAT && v->xtype != CLIMIO_DOUBLE)))
        code = climio_fail(CLIMIO_EINVAL, "%s: variable '%s': quantize mode %d (1 BitGroom, 2 GranularBR, "
                           "3 BitRound) with %d digits/bits needs a float variable", f->path, v->name, quantize_mode,
                           nsd);
    if (code)
        return refuse(f, DEF_COMPRESS, code);
    v->quantize = quantize_mode;
    v->nsd = nsd;
    return send_compression(f, varid, v);
}

int served_def_var_reduce(int ncid, int varid, int op, int steps)
{
    file *f;
    var *v = NULL;
    int code = defining(ncid, "climio_def_var_reduce", &f);
    if (code)
        return code;
    code = variable(f, varid, &v);
    if (!code && (op < CLIMIO_INSTANT || op > CLIMIO_SUM || steps < 1))
        code = climio_fail(CLIMIO_EINVAL, "%s: variable '%s': reduce %d over %d steps: give CLIMIO_INSTANT, MEAN, "
                           "MIN, MAX or SUM over at least 1 step", f->path, v->name, op, steps);
    if (code)
        return refuse(f, DEF_REDUCE, code);
    long long args[5] = {varid, op, steps, 0, 0};
    return send_on(f, DEF_REDUCE, args, NULL, 0, NULL, 0);
}

/* The target of an attribute: the file being defined, a variable of it or CLIMIO_GLOBAL, and a good name. */
static int attribute_target(file *f, int varid, const char *name)
{
    var *v;
    int code = varid == CLIMIO_GLOBAL ? CLIMIO_NOERR : variable(f, varid, &v);
    return code ? code : bad_name(name, f->path, "attribute");
}

int served_put_att_text(int ncid, int varid, const char *name, const char *value)
{
    file *f;
    int code = defining(ncid, "climio_put_att", &f);
    if (code)
        return code;
    code = attribute_target(f, varid, name);
    if (code)
        return refuse(f, PUT_ATT, code);
    long long args[5] = {varid, NC_CHAR, (long long)strlen(value), 0, 0};
    const char *names[2] = {name, value};
    return send_on(f, PUT_ATT, args, names, 2, NULL, 0);
}

int served_put_att_double(int ncid, int varid, const char *name, int xtype, long long len, const double *values)
{
    file *f;
    int code = defining(ncid, "climio_put_att", &f);
    if (code)
        return code;
    code = attribute_target(f, varid, name);
    if (!code)
        code = type_of(f, "attribute", name, xtype);
    if (!code && len < 0)
        code = climio_fail(CLIMIO_EINVAL, "%s: attribute '%s': length %lld", f->path, name, len);
    void *stored = NULL;  /* the numbers in the attribute's type */
    if (!code && (stored = claim(NULL, type_size(xtype) * (size_t)len, "an attribute's values")) == NULL)
        code = CLIMIO_ENOMEM;
    if (code)
        return refuse(f, PUT_ATT, code);
    for (long long i = 0; i < len; i++)
        switch (xtype) {
        case CLIMIO_BYTE: ((int8_t *)stored)[i] = (int8_t)values[i]; break;
        case CLIMIO_SHORT: ((int16_t *)stored)[i] = (int16_t)values[i]; break;
        case CLIMIO_INT: ((int32_t *)stored)[i] = (int32_t)values[i]; break;
        case CLIMIO_FLOAT: ((float *)stored)[i] = (float)values[i]; break;
        case CLIMIO_INT64: ((int64_t *)stored)[i] = (int64_t)values[i]; break;
        default: ((double *)stored)[i] = values[i];
        }
    long long args[5] = {varid, xtype, len, 0, 0};
    buffer data = {.data = stored, .count = len, .xtype = xtype};
    code = send_on(f, PUT_ATT, args, &name, 1, &data, 1);
    free(stored);
    return code;
}

int served_enddef(int ncid)
{
    file *f;
    int code = defining(ncid, "climio_enddef", &f);
    if (code)
        return code;
    code = send_on(f, ENDDEF, NULL, NULL, 0, NULL, 0);
    if (!code)
        f->defined = 1;
    return code;
}

int served_inq_varid(int ncid, const char *name, int *varid)
{
    file *f;
    int code = file_of(ncid, &f);
    if (code)
        return code;
    if (!f->reading) {
        for (int i = 0; i < f->nvars; i++)
            if (!strcmp(f->vars[i].name, name)) {
                *varid = i;
                return CLIMIO_NOERR;
            }
        return failed(f->sys, climio_fail(CLIMIO_EBADID, "%s: no variable '%s'", f->path, name));
    }
    long long value;
    code = send(f->sys, INQ_VARID, f->n, NULL, &name, 1, NULL, 0);
    if (!code)
        code = await_answer(f->sys, "the variable lookup", &value, NULL);
    if (!code)
        *varid = (int)value;
    return failed(f->sys, code);
}

/* ------------------------------------------------------------------------------------------ data */

static int writing(int ncid, const char *call, file **f)
{
    int code = file_of(ncid, f);
    if (code)
        return code;
    if ((*f)->reading || !(*f)->defined)
        return failed((*f)->sys, climio_fail(CLIMIO_ESTATE, "%s: %s before climio_enddef (or on a file opened for "
                                             "reading)", (*f)->path, call));
    return CLIMIO_NOERR;
}

/* Whether a variable has the record dimension (first). */
static int has_records(const file *f, const var *v)
{
    return v->ndims > 0 && f->dims[v->dimids[0]].len == CLIMIO_UNLIMITED;
}

/* The variable, memory type and frame of a data call, checked: 0 or an error code (the frame by
 * climio.model.definition's record_of). */
static int data_call(file *f, int varid, long long frame, int memtype, var **v)
{
    int code = variable(f, varid, v);
    if (!code)
        code = type_of(f, "memory type of", (*v)->name, memtype);
    if (!code && has_records(f, *v) && frame < 0)
        code = climio_fail(CLIMIO_EINVAL, "%s: variable '%s': frame %lld must be >= 0 (0-based from C, 1-based from "
                           "Fortran)", f->path, (*v)->name, frame);
    if (!code && !has_records(f, *v) && frame != CLIMIO_NOFRAME)
        code = climio_fail(CLIMIO_EINVAL, "%s: variable '%s' has no record dimension: pass CLIMIO_NOFRAME, not %lld",
                           f->path, (*v)->name, frame);
    return code;
}

int served_put_time(int ncid, long long frame, double time)
{
    file *f;
    int code = writing(ncid, "climio_put_time", &f);
    if (code)
        return code;
    if (frame < 0)
        return refuse(f, PUT_TIME, climio_fail(CLIMIO_EINVAL, "%s: frame %lld must be >= 0 (0-based from C, 1-based "
                                               "from Fortran)", f->path, frame));
    long long args[5] = {frame, 0, 0, 0, 0};
    buffer data = {.data = &time, .count = 1, .xtype = CLIMIO_DOUBLE};
    return send_on(f, PUT_TIME, args, NULL, 0, &data, 1);
}

/* Levels of a decomposed variable: its lengths after the record dimension over the grid's points (0: the
 * variable is not laid out over the grid; the servers then say what it is). */
static long long rows_of(const file *f, const var *v)
{
    long long inner = 1, grid = 1;
    int first = has_records(f, v);
    for (int i = first; i < v->ndims; i++)
        inner *= f->dims[v->dimids[i]].len;
    for (int a = 0; a < f->d->ndims; a++)
        grid *= f->d->grid[a];
    return grid > 0 && inner % grid == 0 ? inner / grid : 0;
}

/* Copy between a block's halo'd local array (rows of the halo'd box; the halo on the last two axes) and its
 * owned points packed in C order: out of the halo'd array (writes: fill NULL), or into it with `fill` (one value)
 * in every halo element (reads). A read's packed points may lie at the end of the halo'd array itself: each line
 * moves down to its place, in order, so none is overwritten before it moved. */
static void halo_copy(const decomp *d, long long rows, char *haloed, char *packed, size_t size, const void *fill)
{
    long long shape[8], inner = 1, index[8];
    int nd = d->ndims;
    for (int a = 0; a < nd; a++)
        shape[a] = d->count[a] + (a >= nd - 2 ? 2 * d->halo : 0);
    for (int a = 0; a < nd - 1; a++)
        inner *= d->count[a];
    size_t line_bytes = (size_t)d->count[nd - 1] * size;
    char *filled = haloed;
    for (long long r = 0; r < rows; r++) {
        memset(index, 0, sizeof index);
        for (long long line = 0; line < inner; line++) {  /* each owned line along the last axis */
            long long offset = r;
            for (int a = 0; a < nd - 1; a++)
                offset = offset * shape[a] + index[a] + (a >= nd - 2 ? d->halo : 0);
            char *at = haloed + (size_t)(offset * shape[nd - 1] + d->halo) * size;
            if (fill == NULL)
                memcpy(packed, at, line_bytes);
            else {
                for (; filled < at; filled += size)  /* the halo before this line */
                    memcpy(filled, fill, size);
                memmove(at, packed, line_bytes);
                filled = at + line_bytes;
            }
            packed += line_bytes;
            for (int a = nd - 2; a >= 0; a--) {
                if (++index[a] < d->count[a])
                    break;
                index[a] = 0;
            }
        }
    }
    for (char *end = haloed + (size_t)(rows * d->withhalo) * size; fill && filled < end; filled += size)
        memcpy(filled, fill, size);  /* the halo after the last line */
}

/* The file (being written) and variable of a data call, checked; a call this rank refuses is sent as `kind`. */
static int data_target(int ncid, const char *call, int kind, int varid, long long frame, int memtype, file **f,
                       var **v)
{
    int code = writing(ncid, call, f);
    if (code)
        return code;
    code = data_call(*f, varid, frame, memtype, v);
    return code ? refuse(*f, kind, code) : CLIMIO_NOERR;
}

int served_write_darray(int ncid, int varid, long long frame, int memtype, long long arraylen, const void *array)
{
    file *f;
    var *v;
    int code = data_target(ncid, "climio_write_darray", WRITE, varid, frame, memtype, &f, &v);
    if (code)
        return code;
    long long rows = rows_of(f, v), args[5] = {varid, frame, memtype, arraylen, 0};
    const decomp *d = f->d;
    buffer data = {array, arraylen, memtype, NULL, 0};
    if (d->block && d->halo && rows && arraylen == rows * d->withhalo && d->withhalo != d->points) {
        data = (buffer){array, rows * d->points, memtype, d, rows};  /* the owned points, halo stripped */
        args[3] = rows * d->points;
    }
    return send_on(f, WRITE, args, NULL, 0, &data, 1);
}

int served_put_var(int ncid, int varid, long long frame, int memtype, long long len, const void *values)
{
    file *f;
    var *v;
    int code = data_target(ncid, "climio_put_var", PUT_VAR, varid, frame, memtype, &f, &v);
    if (code)
        return code;
    long long count = f->sys->rank == 0 ? len : 0, args[5] = {varid, frame, memtype, count, 0};
    buffer data = {.data = values, .count = count, .xtype = memtype};
    return send_on(f, PUT_VAR, args, NULL, 0, &data, 1);
}

int served_read_darray(int ncid, int varid, long long frame, int memtype, long long arraylen, void *array)
{
    file *f;
    int code = file_of(ncid, &f);
    if (code)
        return code;
    if (!f->reading)
        return failed(f->sys, climio_fail(CLIMIO_ESTATE, "%s: climio_read_darray on a file opened for writing",
                                          f->path));
    if (memtype == NC_CHAR || !type_size(memtype))
        return refuse(f, READ, bad_type(f->path, "memory type", memtype));
    iosystem *s = f->sys;
    const decomp *d = f->d;
    long long args[5] = {varid, frame, memtype, arraylen, d->withhalo}, count;
    int64_t fill = 0;  /* its first bytes: the variable's fill value in memtype */
    code = send(s, READ, f->n, args, NULL, 0, NULL, 0);
    if (!code)
        code = await_answer(s, "the read", &count, &fill);
    if (code)
        return failed(s, code);
    size_t size = type_size(memtype);
    int halo = d->block && d->halo && d->points && count / d->points * d->withhalo == arraylen && count != arraylen;
    char *into = halo ? (char *)array + (size_t)(arraylen - count) * size : array;  /* halo: spread from the end */
    MPI_Request request;
    MPI_Irecv(into, (int)count, mpi_type(memtype), s->server, TAG_ANSWER_DATA, s->inter, &request);
    code = wait_for(s, acked, &request, "the data read");
    if (code) {
        MPI_Cancel(&request);
        MPI_Request_free(&request);
    } else if (halo)  /* the halo gets the fill value, as an attached read gives it */
        halo_copy(d, count / d->points, array, into, size, &fill);
    return failed(s, code);
}

/* ------------------------------------------------------------------------------------------ PIO's calls */

/* Wait for a synchronous answer's header (ok/error or status, value, code, text bytes) and take its text, kept
 * as this rank's last error. */
static int await_header(iosystem *s, const char *what, int64_t header[4])
{
    MPI_Request request;
    MPI_Irecv(header, 4, MPI_INT64_T, s->server, TAG_ANSWER, s->inter, &request);
    int code = wait_for(s, acked, &request, what);
    if (code) {
        MPI_Cancel(&request);
        MPI_Request_free(&request);
        return code;
    }
    if (header[3] > 0) {
        char *text = claim(NULL, (size_t)header[3] + 1, "an answer of the I/O servers");
        if (text == NULL)  /* its text stays untaken: no later answer can be told apart */
            return lose(s, CLIMIO_ENOMEM);
        MPI_Recv(text, (int)header[3], MPI_BYTE, s->server, TAG_ANSWER_TEXT, s->inter, MPI_STATUS_IGNORE);
        climio_keep_error(text);
        free(text);
    }
    return CLIMIO_NOERR;
}

/* One of PIO's calls as a PIO message (docs/serve-protocol.md, "PIO's calls"): libpioc's served side
 * (pio/served_calls.c) knows the calls, this the wire. With `answer` NULL the call is sent without waiting. */
int served_pio_call(int iosysid, const char *call, long long ident, const long long *ints, int nints,
                    const char *const *strings, int nstrings, int memtype, const void *data, long long bytes,
                    served_answer *answer)
{
    iosystem *s = system_of(iosysid);
    if (answer != NULL)
        memset(answer, 0, sizeof *answer);
    if (s == NULL)
        return bad_system(iosysid);
    int code = system_check(s);
    if (code)
        return code;
    const char *names[8];
    names[0] = call;
    for (int i = 0; i < nstrings && i < 7; i++)
        names[1 + i] = strings[i] ? strings[i] : "";
    long long args[5] = {nints, memtype, bytes, 0, 0};
    buffer buffers[2] = {{ints, nints, CLIMIO_INT64, NULL, 0}, {data, bytes, CLIMIO_BYTE, NULL, 0}};
    code = send(s, PIO, ident, args, names, 1 + (nstrings < 7 ? nstrings : 7), buffers, 2);
    if (code || answer == NULL)
        return code;
    int64_t header[4];
    char what[300];
    snprintf(what, sizeof what, "PIO's call %s", call);
    code = await_header(s, what, header);
    if (code)
        return code;
    answer->status = (int)header[0];
    if (header[0])
        return (int)header[2] ? (int)header[2] : CLIMIO_EINTERNAL;
    MPI_Status status;
    int size;
    MPI_Probe(s->server, TAG_ANSWER_DATA, s->inter, &status);
    MPI_Get_count(&status, MPI_BYTE, &size);
    char *payload = claim(NULL, (size_t)size, "an answer of the I/O servers");
    if (payload == NULL)
        return lose(s, CLIMIO_ENOMEM);
    MPI_Recv(payload, size, MPI_BYTE, s->server, TAG_ANSWER_DATA, s->inter, MPI_STATUS_IGNORE);
    int64_t counts[2];
    memcpy(counts, payload, sizeof counts);
    long long strings_at = 16 + 8 * counts[0], data_at = strings_at + (long long)aligned((size_t)counts[1]);
    if (size < 16 || counts[0] < 0 || counts[1] < 0 || data_at > size) {
        free(payload);
        return lose(s, climio_fail(CLIMIO_EINTERNAL, "climio: an answer of %d bytes to %s is not PIO's layout: the "
                                   "servers speak another protocol", size, call));
    }
    answer->payload = payload;
    answer->values = (const int64_t *)(payload + 16);
    answer->nvalues = (int)counts[0];
    answer->strings = payload + strings_at;
    answer->nstrings = counts[1];
    answer->data = payload + data_at;
    answer->ndata = size - data_at;
    return CLIMIO_NOERR;
}

void served_answer_free(served_answer *answer)
{
    free(answer->payload);
    memset(answer, 0, sizeof *answer);
}
