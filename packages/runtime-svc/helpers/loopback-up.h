/* Sets `lo` up in the calling thread's network namespace; the reason on stderr when it cannot. */
#ifndef SKIFF_LOOPBACK_UP_H
#define SKIFF_LOOPBACK_UP_H

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int loopback_up(void) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fprintf(stderr, "socket for setting lo up: %s\n", strerror(errno));
    return -1;
  }
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  int result = ioctl(fd, SIOCGIFFLAGS, &ifr);
  if (result == 0) {
    ifr.ifr_flags |= IFF_UP;
    result = ioctl(fd, SIOCSIFFLAGS, &ifr);
  }
  if (result < 0) fprintf(stderr, "setting lo up: %s\n", strerror(errno));
  close(fd);
  return result;
}

#endif
