// The event stream bench's consumers (bench/events.ts builds this with g++ and runs it): N
// connections to GET /events on one thread, one epoll loop and one reused read buffer, so that
// the load they put on the bench's machine is that of a good load generator (the system calls of
// reading), not a JavaScript runtime's per-read work. On a real site the consumers run elsewhere.
//
// Every byte of every stream is read; each connection counts the frames it gets (the "\ndata: "
// of each one: JSON data lines cannot hold a newline; a heartbeat has an id but no data) and the first `timed` connections
// also take each frame's delay, from its `at` (RFC 3339, UTC, milliseconds) to the moment it was
// read, while measuring is on.
//
//   consumers HOST PORT COUNT TIMED AUTHORIZATION
// stdin, one command a line: "measure 1" / "measure 0"; "report" prints one JSON line and exits.
// stdout: "ready" once every connection has its 200 and headers.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

static const char DATA[] = "\ndata: ";
static const size_t DATA_LEN = sizeof(DATA) - 1;
static const char AT[] = "\"at\":\"";
static const size_t AT_LEN = sizeof(AT) - 1;
static const size_t STAMP_LEN = 24;  // 2026-11-27T01:36:04.123Z

struct Conn {
  int fd;
  bool head = true;
  bool timed;
  long received = 0;
  std::string kept;  // bytes read and not yet scanned: a marker's start, or a frame whose `at` has not all come
};

static void fail(const char *what) {
  perror(what);
  exit(1);
}

static long long now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int digits(const char *p, int n) {
  int v = 0;
  for (int i = 0; i < n; i++) v = v * 10 + (p[i] - '0');
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date.
static long long days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return (long long)era * 146097 + doe - 719468;
}

static long long stamp_ms(const char *s) {
  const long long days = days_from_civil(digits(s, 4), digits(s + 5, 2), digits(s + 8, 2));
  return ((days * 24 + digits(s + 11, 2)) * 60 + digits(s + 14, 2)) * 60000 + digits(s + 17, 2) * 1000 + digits(s + 20, 3);
}

static std::vector<int> delays;
static bool measuring = false;

// Scan [data, data+len) of one connection; keep what a later read must complete.
static void scan(Conn &c, const char *data, size_t len, long long now) {
  const bool timing = c.timed && measuring;
  const char *end = data + len;
  const char *from = data;
  const char *hit;
  while ((hit = (const char *)memmem(from, end - from, DATA, DATA_LEN))) {
    if (timing) {
      const char *at = (const char *)memmem(hit, end - hit, AT, AT_LEN);
      if (!at || at + AT_LEN + STAMP_LEN > end) break;
      delays.push_back((int)(now - stamp_ms(at + AT_LEN)));
    }
    c.received++;
    from = hit + DATA_LEN;
  }
  const char *keep = hit ? hit : std::max(from, end - (DATA_LEN - 1));
  if (keep < data) keep = data;
  c.kept.assign(keep, end - keep);
}

static int connect_to(const char *host, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail("socket");
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) fail("inet_pton");
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) fail("connect");
  return fd;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: consumers HOST PORT COUNT TIMED AUTHORIZATION\n");
    return 2;
  }
  const char *host = argv[1];
  const int port = atoi(argv[2]);
  const int count = atoi(argv[3]);
  const int timed = atoi(argv[4]);
  char request[1024];
  const int rlen = snprintf(request, sizeof request, "GET /events?kind=node HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: %s\r\nAccept: text/event-stream\r\n\r\n", host, port, argv[5]);

  const int ep = epoll_create1(0);
  if (ep < 0) fail("epoll_create1");
  std::vector<Conn> conns(count);
  for (int i = 0; i < count; i++) {
    conns[i].fd = connect_to(host, port);
    conns[i].timed = i < timed;
    if (write(conns[i].fd, request, rlen) != rlen) fail("write");
    struct epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.u32 = i;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) < 0) fail("epoll_ctl");
  }
  struct epoll_event in = {};
  in.events = EPOLLIN;
  in.data.u32 = count;  // stdin
  if (epoll_ctl(ep, EPOLL_CTL_ADD, 0, &in) < 0) fail("epoll_ctl stdin");

  const size_t CAP = 256 * 1024;
  std::vector<char> buf(CAP + 64 * 1024);
  std::string commands;
  int heads = count;
  std::vector<struct epoll_event> events(count + 1);
  for (;;) {
    const int n = epoll_wait(ep, events.data(), (int)events.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("epoll_wait");
    }
    const long long now = now_ms();
    for (int e = 0; e < n; e++) {
      const unsigned i = events[e].data.u32;
      if (i == (unsigned)count) {
        char cmd[256];
        const ssize_t r = read(0, cmd, sizeof cmd);
        if (r <= 0) return 0;  // the bench is gone
        commands.append(cmd, r);
        size_t nl;
        while ((nl = commands.find('\n')) != std::string::npos) {
          const std::string line = commands.substr(0, nl);
          commands.erase(0, nl + 1);
          if (line == "measure 1") measuring = true;
          else if (line == "measure 0") measuring = false;
          else if (line == "report") {
            long total = 0, least = conns.empty() ? 0 : conns[0].received, most = 0;
            for (const Conn &c : conns) {
              total += c.received;
              least = std::min(least, c.received);
              most = std::max(most, c.received);
            }
            std::sort(delays.begin(), delays.end());
            const auto pct = [](double p) { return delays.empty() ? -1 : delays[std::min(delays.size() - 1, (size_t)(p / 100 * delays.size()))]; };
            printf("{\"received\":%ld,\"least\":%ld,\"most\":%ld,\"p50\":%d,\"p99\":%d,\"max\":%d,\"n\":%zu}\n", total, least, most, pct(50), pct(99), delays.empty() ? -1 : delays.back(), delays.size());
            fflush(stdout);
            return 0;
          }
        }
        continue;
      }
      Conn &c = conns[i];
      // The kept bytes (a part of one frame at most) go in front of what is read, in the one buffer.
      const size_t k = c.kept.size();
      if (k > buf.size() - CAP) buf.resize(k + CAP);
      memcpy(buf.data(), c.kept.data(), k);
      const ssize_t r = read(c.fd, buf.data() + k, CAP);
      if (r <= 0) {
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        fprintf(stderr, "consumer %u: the stream ended\n", i);
        return 1;
      }
      const char *data = buf.data();
      size_t len = k + r;
      if (c.head) {
        const char *end = (const char *)memmem(data, len, "\r\n\r\n", 4);
        if (!end) {
          c.kept.assign(data, len);
          continue;
        }
        if (len < 12 || memcmp(data, "HTTP/1.1 200", 12) != 0) {
          fprintf(stderr, "GET /events: %.40s\n", data);
          return 1;
        }
        c.head = false;
        if (--heads == 0) {
          fputs("ready\n", stdout);
          fflush(stdout);
        }
        // Every frame's "data: " follows its "id: " line's "\n".
        len -= (end + 3) - data;
        data = end + 3;
      }
      scan(c, data, len, now);
    }
  }
}
