/*
 * c-team-config: a Recon controller written in C, from docs/plugin-abi.md
 * alone (no SDK, no libc). It keeps a ConfigMap `team-info` in every
 * Namespace labelled `recon.example/team`, with exactly the data
 * `team: <the label's value>` and the label
 * `app.kubernetes.io/managed-by: c-team-config`, as Kubernetes' root-CA
 * publisher keeps `kube-root-ca.crt` in every namespace: it creates the
 * map where it is missing and puts it back where someone changed it.
 *
 * How it works, one `recon_handle` call at a time:
 *   - watch 0 (Namespaces with the label) tells it which namespaces to
 *     serve and with which team; watch 1 (ConfigMaps named team-info)
 *     tells it when one of its maps changed or went away. Either marks
 *     the namespace dirty.
 *   - for each dirty namespace it reads the map with a direct `get`, at
 *     resourceVersion "0" (whatever the API server's cache has: cheap,
 *     possibly stale).
 *   - the answer decides: 404 -> `create`; another label or data ->
 *     `update` carrying the resourceVersion it read, a precondition; as
 *     it should be -> nothing.
 *   - a write refused with 409 (Conflict: the map changed since that read;
 *     AlreadyExists: the cache had not seen it yet) means the read was
 *     stale: it reads again, this time from etcd (resourceVersion unset).
 *   - any other failure: one log line, and a `requeueAfter` of a second
 *     after which it checks every namespace again.
 *
 * Build (see README.md):
 *   clang --target=wasm32-unknown-unknown -O2 -nostdlib -mbulk-memory -Wall \
 *     -Wl,--no-entry -o recon_plugin_c_team_config.wasm plugin.c
 */

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

/* ------------------------------------------------------------------ */
/* The ABI's edges: exports by name, the one import.                  */

#define EXPORT(name) __attribute__((export_name(name)))

/* recon.log(ptr, len): one UTF-8 line for the component's log. */
__attribute__((import_module("recon"), import_name("log"))) void recon_log(const u8 *ptr, u32 len);

#define LABEL "recon.example/team"
#define CONFIG_MAP "team-info"
#define CONTROLLER "c-team-config"
#define MANAGED_BY "app.kubernetes.io/managed-by"

/* ------------------------------------------------------------------ */
/* Log lines, built in a fixed buffer (a longer line is cut short).   */

static u8 line[512];
static u32 line_len;

static void log_bytes(const u8 *s, u32 n) {
    for (u32 i = 0; i < n && line_len < sizeof line; i++) line[line_len++] = s[i];
}

static u32 cstr_len(const char *s) {
    u32 n = 0;
    while (s[n]) n++;
    return n;
}

static void log_str(const char *s) { log_bytes((const u8 *)s, cstr_len(s)); }

static void log_num(u64 n) {
    u8 digits[20];
    u32 i = sizeof digits;
    do {
        digits[--i] = (u8)('0' + n % 10);
        n /= 10;
    } while (n);
    log_bytes(digits + i, sizeof digits - i);
}

static void log_end(void) {
    recon_log(line, line_len);
    line_len = 0;
}

/* The ABI's panic convention: a line beginning "panicked at " logged
 * right before a trap is the crash reason the host reports. */
#define DIE(why) die(__LINE__, why)
__attribute__((noreturn)) static void die(u32 where, const char *why) {
    line_len = 0;
    log_str("panicked at plugins/c-team-config/plugin.c:");
    log_num(where);
    log_str(": ");
    log_str(why);
    log_end();
    __builtin_trap();
}

/* ------------------------------------------------------------------ */
/* Memory: one bump arena from __heap_base, emptied when the host asks */
/* for the next call's input buffer (by then it has copied our last   */
/* output out, as the ABI says). The call's output grows at its top.  */

extern u8 __heap_base;
static u32 arena_top;

/* Grows the linear memory so that it holds `end` bytes; 0 if it cannot. */
static int memory_reaches(u64 end) {
    u64 have = (u64)__builtin_wasm_memory_size(0) * 65536;
    if (end <= have) return 1;
    if (end > 0xFFFFFFFFull) return 0;
    u32 pages = (u32)((end - have + 65535) / 65536);
    return __builtin_wasm_memory_grow(0, pages) != (u32)-1;
}

EXPORT("recon_alloc") u32 recon_alloc(u32 len) {
    u32 start = ((u32)&__heap_base + 7) & ~7u;
    if (!memory_reaches((u64)start + len)) return 0;
    arena_top = start + len;
    return start;
}

EXPORT("recon_abi_version") int recon_abi_version(void) { return 1; }

/* ------------------------------------------------------------------ */
/* The output: JSON written at the arena's top.                       */

static u8 *out;
static u32 out_len;
static u32 actions_written;

static void out_begin(void) {
    out = (u8 *)arena_top;
    out_len = 0;
    actions_written = 0;
}

static void put_bytes(const u8 *s, u32 n) {
    if (!memory_reaches((u64)(u32)out + out_len + n)) DIE("out of memory for the output");
    for (u32 i = 0; i < n; i++) out[out_len + i] = s[i];
    out_len += n;
}

static void put(const char *s) { put_bytes((const u8 *)s, cstr_len(s)); }

/* Packs the output's address and length as recon_init and recon_handle return them. */
static u64 out_packed(void) { return ((u64)(u32)out << 32) | out_len; }

/* ------------------------------------------------------------------ */
/* Reading JSON. A value is a span of the input's bytes; nothing is   */
/* decoded. Strings stay as JSON has them (escapes and all): the host */
/* writes equal strings the same way, so raw bytes compare as strings */
/* do, and they go back into JSON as they are.                        */

typedef struct {
    const u8 *at;  /* first byte of the value; 0 when there is none */
    const u8 *end; /* one past its last byte */
} Span;

static const Span NONE = {0, 0};

static const u8 *skip_space(const u8 *p, const u8 *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

/* p is at a '"': the byte after the closing quote, or 0. */
static const u8 *skip_string(const u8 *p, const u8 *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') p++;
        else if (*p == '"') return p + 1;
    }
    return 0;
}

/* The value starting at p (after spaces), or NONE if it is malformed. */
static Span value_at(const u8 *p, const u8 *end) {
    p = skip_space(p, end);
    if (p >= end) return NONE;
    const u8 *start = p;
    if (*p == '"') {
        const u8 *after = skip_string(p, end);
        return after ? (Span){start, after} : NONE;
    }
    if (*p == '{' || *p == '[') {
        u32 depth = 0;
        while (p < end) {
            if (*p == '"') {
                p = skip_string(p, end);
                if (!p) return NONE;
                continue;
            }
            if (*p == '{' || *p == '[') depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0) return (Span){start, p + 1};
            p++;
        }
        return NONE;
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
    return (Span){start, p};
}

/* Walks the members of an object or the items of an array. */
typedef struct {
    const u8 *p, *end;
} Cursor;

static Cursor open(Span v) {
    if (!v.at || (*v.at != '{' && *v.at != '[')) return (Cursor){0, 0};
    return (Cursor){v.at + 1, v.end - 1};
}

/* The next item, or NONE at the end. For an object, `key` gets the
 * member's name (a string span, quotes included). */
static Span next(Cursor *c, Span *key) {
    if (!c->p) return NONE;
    const u8 *p = skip_space(c->p, c->end);
    if (p < c->end && *p == ',') p = skip_space(p + 1, c->end);
    if (p >= c->end) return NONE;
    if (key) {
        *key = value_at(p, c->end);
        if (!key->at) return NONE;
        p = skip_space(key->end, c->end);
        if (p >= c->end || *p != ':') return NONE;
        p++;
    }
    Span v = value_at(p, c->end);
    c->p = v.at ? v.end : 0;
    return v;
}

/* Whether a string span is exactly the string s. */
static int is(Span v, const char *s) {
    u32 n = cstr_len(s);
    if (!v.at || (u32)(v.end - v.at) != n + 2 || *v.at != '"') return 0;
    for (u32 i = 0; i < n; i++)
        if (v.at[1 + i] != (u8)s[i]) return 0;
    return 1;
}

/* The member `name` of an object, or NONE. */
static Span member(Span object, const char *name) {
    if (!object.at || *object.at != '{') return NONE;
    Cursor c = open(object);
    Span key;
    for (Span v = next(&c, &key); v.at; v = next(&c, &key))
        if (is(key, name)) return v;
    return NONE;
}

static u64 number(Span v) {
    u64 n = 0;
    for (const u8 *p = v.at; p && p < v.end && *p >= '0' && *p <= '9'; p++) n = n * 10 + (u64)(*p - '0');
    return n;
}

static int same(Span a, Span b) {
    if (!a.at || !b.at || a.end - a.at != b.end - b.at) return 0;
    for (const u8 *p = a.at, *q = b.at; p < a.end; p++, q++)
        if (*p != *q) return 0;
    return 1;
}

/* A string span's text between its quotes. */
static void log_string(Span s) {
    if (s.at) log_bytes(s.at + 1, (u32)(s.end - s.at) - 2);
}

/* ------------------------------------------------------------------ */
/* What it knows: the labelled namespaces, each with its team and     */
/* whether its map needs a look. Strings are kept as JSON spells them */
/* (quotes included), ready to write back.                            */

#define MAX_NAMESPACES 256
#define MAX_STRING 130 /* a 63-character name or label value, quoted, with room */

typedef struct {
    u8 name[MAX_STRING];
    u32 name_len;
    u8 team[MAX_STRING];
    u32 team_len;
    u8 used;
    u8 dirty;  /* read its ConfigMap at the end of this call */
    u8 quorum; /* the last read was stale: read from etcd next time */
} Namespace;

static Namespace namespaces[MAX_NAMESPACES];
static int retry_requested;

static Span name_of(const Namespace *ns) { return (Span){ns->name, ns->name + ns->name_len}; }
static Span team_of(const Namespace *ns) { return (Span){ns->team, ns->team + ns->team_len}; }

static Namespace *find(Span name) {
    for (u32 i = 0; i < MAX_NAMESPACES; i++)
        if (namespaces[i].used && same(name_of(&namespaces[i]), name)) return &namespaces[i];
    return 0;
}

static int copy_string(u8 *to, u32 *len, Span s) {
    u32 n = (u32)(s.end - s.at);
    if (!s.at || *s.at != '"' || n > MAX_STRING) return 0;
    for (u32 i = 0; i < n; i++) to[i] = s.at[i];
    *len = n;
    return 1;
}

/* A Namespace from watch 0 (listed, ADDED or MODIFIED): serve it. */
static void namespace_seen(Span object) {
    Span metadata = member(object, "metadata");
    Span name = member(metadata, "name");
    Span team = member(member(metadata, "labels"), LABEL);
    if (!name.at || !team.at) return;
    Namespace *ns = find(name);
    for (u32 i = 0; !ns && i < MAX_NAMESPACES; i++)
        if (!namespaces[i].used) ns = &namespaces[i];
    if (!ns) {
        log_str("more than 256 labelled namespaces: ignoring ");
        log_string(name);
        log_end();
        return;
    }
    if (!copy_string(ns->name, &ns->name_len, name) || !copy_string(ns->team, &ns->team_len, team)) {
        ns->used = 0;
        log_str("a namespace name or team is too long: ignoring ");
        log_string(name);
        log_end();
        return;
    }
    ns->used = 1;
    ns->dirty = 1;
}

/* ------------------------------------------------------------------ */
/* Actions.                                                           */

static void action_begin(void) { put(actions_written++ ? "," : ""); }

static void put_span(Span s) { put_bytes(s.at, (u32)(s.end - s.at)); }

static void put_key(const Namespace *ns) {
    put("{\"kind\":\"ConfigMap\",\"namespace\":");
    put_span(name_of(ns));
    put(",\"name\":\"" CONFIG_MAP "\"}");
}

/* A direct read of the namespace's map: from the API server's cache
 * ("0") unless the last one proved stale, then from etcd (unset). */
static void get(Namespace *ns) {
    action_begin();
    put("{\"type\":\"get\",\"key\":");
    put_key(ns);
    put(ns->quorum ? "}" : ",\"resourceVersion\":\"0\"}");
    ns->quorum = 0;
}

/* The map as the controller wants it: its labels and data are the
 * controller's. With a resourceVersion (an update's), that is a
 * precondition: the API server refuses the write with 409 Conflict if
 * the map has moved on since. */
static void put_map(const Namespace *ns, Span resource_version) {
    put("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" CONFIG_MAP "\",\"namespace\":");
    put_span(name_of(ns));
    if (resource_version.at) {
        put(",\"resourceVersion\":");
        put_span(resource_version);
    }
    put(",\"labels\":{\"" MANAGED_BY "\":\"" CONTROLLER "\"}},\"data\":{\"team\":");
    put_span(team_of(ns));
    put("}}");
}

static void create(const Namespace *ns) {
    action_begin();
    put("{\"type\":\"create\",\"object\":");
    put_map(ns, NONE);
    put("}");
}

static void update(const Namespace *ns, Span resource_version) {
    action_begin();
    put("{\"type\":\"update\",\"object\":");
    put_map(ns, resource_version);
    put("}");
}

/* Whether an object (a map's labels or data) has exactly one member,
 * `key`, whose value is `value`. */
static int only_member(Span object, const char *key, Span value) {
    Cursor c = open(object);
    Span name;
    Span first = next(&c, &name);
    return first.at && is(name, key) && same(first, value) && !next(&c, &name).at;
}

/* Whether a map read from the API server is as the controller wants it. */
static int map_is_right(Span map, const Namespace *ns) {
    static const u8 controller[] = "\"" CONTROLLER "\"";
    Span ours = {controller, controller + sizeof controller - 1};
    return only_member(member(map, "data"), "team", team_of(ns)) &&
           only_member(member(member(map, "metadata"), "labels"), MANAGED_BY, ours);
}

/* ------------------------------------------------------------------ */
/* Results of its requests.                                           */

static void log_about(const char *what, const Namespace *ns) {
    log_str(what);
    log_str(" ConfigMap ");
    log_string(name_of(ns));
    log_str("/" CONFIG_MAP);
}

/* A request that failed for another reason than a stale read: say so,
 * and look at every namespace again in a second. */
static void failed(Span verb, const Namespace *ns, Span err) {
    log_string(verb);
    log_about(" of", ns);
    log_str(" failed (");
    log_num(number(member(err, "code")));
    log_str(" ");
    log_string(member(err, "reason"));
    log_str("); checking every namespace again in 1s");
    log_end();
    retry_requested = 1;
}

static void on_result(Span result) {
    Span verb = member(result, "verb");
    Namespace *ns = find(member(member(result, "key"), "namespace"));
    if (!ns) return; /* no longer labelled: nothing to keep there */
    Span outcome = member(result, "outcome");
    Span ok = member(outcome, "ok");
    Span err = member(outcome, "err");
    u64 code = number(member(err, "code"));
    if (is(verb, "get")) {
        if (ok.at && !map_is_right(ok, ns)) update(ns, member(member(ok, "metadata"), "resourceVersion"));
        else if (!ok.at && code == 404) create(ns);
        else if (!ok.at) failed(verb, ns, err);
        return;
    }
    /* Its create or update. */
    if (ok.at) {
        log_about(is(verb, "create") ? "created" : "updated", ns);
        log_str(" for team ");
        log_string(team_of(ns));
        log_str(" at resourceVersion ");
        log_string(member(member(ok, "metadata"), "resourceVersion"));
        log_end();
    } else if (code == 409) {
        log_about(is(verb, "create") ? "create of" : "update of", ns);
        log_str(" refused (409 ");
        log_string(member(err, "reason"));
        log_str("): its read was stale; reading it again from etcd");
        log_end();
        ns->dirty = 1;
        ns->quorum = 1;
    } else {
        failed(verb, ns, err);
    }
}

/* ------------------------------------------------------------------ */
/* The two calls.                                                     */

EXPORT("recon_init") u64 recon_init(const u8 *config, u32 len) {
    Span name = member(value_at(config, config + len), "name");
    log_str(CONTROLLER " starting as ");
    log_string(name);
    log_str(": a ConfigMap " CONFIG_MAP " in every Namespace labelled " LABEL);
    log_end();
    out_begin();
    put("{\"name\":\"" CONTROLLER "\",\"abiVersion\":1,\"watches\":["
        "{\"kind\":\"Namespace\",\"labelSelector\":\"" LABEL "\"},"
        "{\"kind\":\"ConfigMap\",\"fieldSelector\":\"metadata.name=" CONFIG_MAP "\"}],"
        "\"writes\":[{\"kind\":\"ConfigMap\",\"verbs\":[\"get\",\"create\",\"update\"]}]}");
    return out_packed();
}

/* One event of the input. */
static void on_event(Span event) {
    Span type = member(event, "type");
    u64 watch = number(member(event, "watch"));
    if (is(type, "listed")) {
        /* A list replaces everything known from that watch. */
        if (watch == 0)
            for (u32 i = 0; i < MAX_NAMESPACES; i++) namespaces[i].used = 0;
        Cursor items = open(member(event, "objects"));
        for (Span object = next(&items, 0); object.at; object = next(&items, 0)) {
            if (watch == 0) namespace_seen(object);
            else {
                Namespace *ns = find(member(member(object, "metadata"), "namespace"));
                if (ns) ns->dirty = 1;
            }
        }
    } else if (is(type, "watch")) {
        Span change = member(event, "event");
        Span kind = member(change, "type");
        Span object = member(change, "object");
        if (is(kind, "BOOKMARK")) return;
        if (watch == 0 && is(kind, "DELETED")) {
            Namespace *ns = find(member(member(object, "metadata"), "name"));
            if (ns) ns->used = 0;
        } else if (watch == 0) {
            namespace_seen(object);
        } else {
            /* Its map changed or went: look again. */
            Namespace *ns = find(member(member(object, "metadata"), "namespace"));
            if (ns) ns->dirty = 1;
        }
    } else if (is(type, "result")) {
        on_result(event);
    } else if (is(type, "timer")) {
        for (u32 i = 0; i < MAX_NAMESPACES; i++) namespaces[i].dirty = namespaces[i].used;
    }
}

EXPORT("recon_handle") u64 recon_handle(const u8 *input, u32 len) {
    out_begin();
    put("{\"actions\":[");
    retry_requested = 0;
    Cursor events = open(member(value_at(input, input + len), "events"));
    for (Span event = next(&events, 0); event.at; event = next(&events, 0)) on_event(event);
    for (u32 i = 0; i < MAX_NAMESPACES; i++) {
        Namespace *ns = &namespaces[i];
        if (ns->used && ns->dirty) get(ns);
        ns->dirty = 0;
    }
    if (retry_requested) {
        action_begin();
        put("{\"type\":\"requeueAfter\",\"key\":\"retry\",\"afterMs\":1000}");
    }
    put("]}");
    return out_packed();
}
