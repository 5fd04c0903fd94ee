"""The perf.data file as a whole: writable, finished, readable.

The recording's perf.data file as a whole: whether -o may be written,
whether perf finished it or ran out of disk, whether it can be read.
"""

import os
import stat
import struct

from .errors import RecordError

PERF_MAGIC = b"PERFILE2"


def disk_full(path, room=1 << 20):
    """The one-line error when perf record ran out of disk for path, else
    None. perf then stops the program, exits 255 and leaves a header whose
    data size is still 0: nothing in the file can be read, so it is
    removed (it only holds the space the disk lacks)."""
    try:
        with open(path, "rb") as f:
            header = f.read(56)
        size = os.path.getsize(path)
        st = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if len(header) < 56 or header[:8] != PERF_MAGIC or free >= room or \
            struct.unpack("<Q", header[48:56])[0] != 0:
        return None
    try:
        os.unlink(path)
    except OSError:
        return ("disk full: perf stopped writing %s at %d bytes and stopped "
                "the program; the file is unusable" % (path, size))
    return ("disk full: perf stopped writing %s at %d bytes and stopped the "
            "program; nothing readable was recorded, the file is removed"
            % (path, size))


def is_regular(path):
    """Whether path is a regular file (after links): opening a FIFO or a
    device where a file is expected would block or read forever."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def check_output(path):
    """-o PATH may be written: absent, or a perf.data that perf will move
    to PATH.old (replacing a PATH.old only if that is a perf.data too).
    Returns the note to print ("" if none); a RecordError refuses a file
    that is not a recording, which perf would move away without a word
    and the next run would destroy."""
    def magic(p):
        try:
            with open(p, "rb") as f:
                return f.read(8)
        except OSError:
            return None
    if os.path.isdir(path):
        raise RecordError("-o %s is a directory" % path)
    if not os.path.lexists(path):
        return ""
    if magic(path) != PERF_MAGIC:
        raise RecordError("-o %s: the file exists and is not a perf.data "
                          "recording; not touching it (remove it or name "
                          "another file)" % path)
    old = path + ".old"
    if os.path.lexists(old) and magic(old) != PERF_MAGIC:
        raise RecordError("-o %s: perf would move the previous recording to "
                          "%s, which exists and is not a perf.data; not "
                          "touching it" % (path, old))
    return "allocsites: the previous %s is kept as %s\n" % (path, old)


UNFINISHED = ("%s is a recording perf never finished (its header was "
              "never completed: perf was killed, by a hangup for example, "
              "or is still writing it); record again and let it end with "
              "the program or Ctrl-C")


def finished(path):
    """False if path is a perf.data whose header perf never completed
    (check_perf_data's UNFINISHED): its data size, which perf writes
    last, when it finishes the file, is 0. Else True (whatever else it
    is)."""
    try:
        with open(path, "rb") as f:
            header = f.read(56)
    except OSError:
        return True
    return not (len(header) == 56 and header[:8] == PERF_MAGIC and
                not is_pipe_header(header) and
                struct.unpack("<Q", header[48:56])[0] == 0)


def is_pipe_header(header):
    """Whether a perf.data's first bytes are a stream's (perf record -o
    -: a 16-byte header, then records; no data offset or size to check)
    rather than a file's 104-byte header."""
    return len(header) >= 16 and header[:8] == PERF_MAGIC and \
        struct.unpack("<Q", header[8:16])[0] == 16


def check_perf_data(path):
    """A one-line error unless path is a readable perf.data file whose data
    section is all there (perf's own message for a file cut short is
    "incompatible file format (rerun with -v to learn more)")."""
    if os.path.exists(path) and not os.path.isdir(path) and \
            not is_regular(path):
        raise RecordError("%s: not a regular file (a pipe or a device): "
                          "report reads a perf.data file" % path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "data")):
            # perf record --threads writes a directory: the header in
            # "data", each thread's records in data.N
            raise RecordError("%s: a directory of perf record --threads, "
                              "which the report does not read: record "
                              "without --threads" % path)
        raise RecordError("%s: a directory, not a perf.data file" % path)
    try:
        with open(path, "rb") as f:
            header = f.read(56)
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise RecordError("%s: no such file (record one first: allocsites "
                          "record -- PROG)" % path)
    except OSError as e:
        raise RecordError("%s: %s" % (path, e.strerror))
    if header[:8] != PERF_MAGIC:
        raise RecordError("%s: not a perf.data file" % path)
    if is_pipe_header(header):
        return   # a stream: its end is where perf stopped writing
    # perf_file_header: magic, size, attr_size, attrs {offset, size},
    # data {offset, size}, ...
    if len(header) < 56:
        raise RecordError("%s is truncated or not a complete perf.data"
                          % path)
    data_offset, data_size = struct.unpack("<QQ", header[40:56])
    if not finished(path):
        raise RecordError(UNFINISHED % path)
    if size < data_offset + data_size:
        raise RecordError("%s is truncated or not a complete perf.data (%d "
                          "of its %d bytes of data are missing)"
                          % (path, data_offset + data_size - size, data_size))
