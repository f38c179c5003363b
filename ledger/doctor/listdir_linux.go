package doctor

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// dirBufs are listDirRaw's getdents buffers, one per lister at a time.
var dirBufs = sync.Pool{New: func() any { return new([16 << 10]byte) }}

// listDirRaw is listDir with open, getdents64 and close and nothing else:
// os.Open adds an epoll registration and a finalizer to every directory,
// which at 100k run directories was a third of doctor's system time
// (issue 30). ok is false when the raw listing failed for a reason other
// than "cannot be listed"; listDir then asks os.ReadDir, which decides.
func listDirRaw(dir string) (names map[string]fs.FileMode, ok bool) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	buf := dirBufs.Get().(*[16 << 10]byte)
	defer dirBufs.Put(buf)
	out := map[string]fs.FileMode{}
	for {
		n, err := syscall.ReadDirent(fd, buf[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if n <= 0 {
			return out, true
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			if len(b) < 19 {
				return nil, false
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, false
			}
			typ, name := b[18], b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			mode, known := direntMode(typ)
			if !known {
				// DT_UNKNOWN (some file systems): what os.ReadDir does, lstat.
				info, err := os.Lstat(filepath.Join(dir, string(name)))
				if errors.Is(err, fs.ErrNotExist) {
					continue // gone since the listing: os.ReadDir skips it too
				}
				if err != nil {
					return nil, false
				}
				mode = info.Mode().Type()
			}
			out[string(name)] = mode
		}
	}
}

func direntMode(typ uint8) (fs.FileMode, bool) {
	switch typ {
	case syscall.DT_REG:
		return 0, true
	case syscall.DT_DIR:
		return fs.ModeDir, true
	case syscall.DT_LNK:
		return fs.ModeSymlink, true
	case syscall.DT_FIFO:
		return fs.ModeNamedPipe, true
	case syscall.DT_SOCK:
		return fs.ModeSocket, true
	case syscall.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case syscall.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}
