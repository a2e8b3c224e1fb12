/* Namespaces bind-mounted onto files made for them: what keeps a pod's namespaces alive without a process. */
#ifndef SKIFF_NS_FILES_H
#define SKIFF_NS_FILES_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

/*
 * Creates FILE (it must not exist; a link there is refused) and bind-mounts SOURCE, a namespace's
 * file, onto it. 0, or -1 with the reason on stderr and no file left.
 */
static int bind_onto_new_file(const char *source, const char *kind, const char *file) {
  int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0) {
    fprintf(stderr, "creating %s: %s\n", file, strerror(errno));
    return -1;
  }
  close(fd);
  if (mount(source, file, NULL, MS_BIND, NULL) < 0) {
    fprintf(stderr, "bind-mounting the %s namespace (%s) onto %s: %s\n", kind, source, file, strerror(errno));
    unlink(file);
    return -1;
  }
  return 0;
}

/* Undoes bind_onto_new_file for the first COUNT files of FILES, every STRIDE-th entry. */
static void unbind_files(char *const *files, int stride, int count) {
  for (int i = 0; i < count; i++) {
    const char *file = files[i * stride];
    if (umount2(file, MNT_DETACH) < 0) fprintf(stderr, "cleanup: umount %s: %s\n", file, strerror(errno));
    else unlink(file);
  }
}

#endif
