package import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes `data` to `path` through `partial` renamed into place: the file is whole or absent, readable by its owner
/// alone, and a full disk leaves nothing behind. `partial` is created 0600 anew (`O_EXCL`, no symbolic link
/// followed: a file already there, left by a crashed run or planted, is removed first, so it keeps no other owner
/// or mode). With `sync`, the bytes reach the disk before the rename. A failure is `localIO` with the system's
/// reason (callers add what the file is). For this package's own modules and tools, not part of the public API.
package func writeWhole(_ data: Data, to path: String, through partial: String, sync: Bool = false) throws(MBaaSError) {
    unlink(partial)
    let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw MBaaSError(.localIO, String(cString: strerror(errno))) }
    var failure: Int32 = 0
    data.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                failure = errno
                return
            }
            offset += n
        }
    }
    if failure == 0, sync, fsync(fd) != 0 { failure = errno }
    if close(fd) != 0, failure == 0 { failure = errno }
    if failure == 0, rename(partial, path) != 0 { failure = errno }
    if failure != 0 {
        unlink(partial)
        throw MBaaSError(.localIO, String(cString: strerror(failure)))
    }
}
