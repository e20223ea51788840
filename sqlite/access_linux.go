package sqlite

import "golang.org/x/sys/unix"

// statFS reads the read-only flag and free space of the file system
// holding path. root may write into the blocks reserved for it.
func statFS(path string) (fsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fsStats{}, err
	}
	return fsStatsOf(&st, unix.Geteuid()), nil
}

// fsStatsOf is the fsStats of st for a process of effective uid euid.
func fsStatsOf(st *unix.Statfs_t, euid int) fsStats {
	size := uint64(st.Frsize)
	if size == 0 {
		size = uint64(st.Bsize)
	}
	blocks := st.Bavail
	if euid == 0 {
		blocks = st.Bfree
	}
	return fsStats{
		readOnly: st.Flags&unix.ST_RDONLY != 0,
		avail:    blocks * size,
		noInodes: st.Files > 0 && st.Ffree == 0,
	}
}
