import Foundation
import MBaaSCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
// `struct stat` is owned by whichever C module loaded <sys/stat.h> first; once a dependency (GRDB, swift-crypto) has
// loaded libdispatch's headers that is CDispatch, and member import visibility then asks for it by name (release
// builds fail without it).
#if canImport(CDispatch)
import CDispatch
#endif
// With swift-nio-ssl in the graph (the emulator's TLS) the owner may be CoreFoundation instead.
#if canImport(CoreFoundation)
import CoreFoundation
#endif

/// The mode of `path` as `stat` gives it (the link followed), or `nil` with `errno` set.
func fileMode(_ path: String) -> mode_t? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mode
}

/// Where an output option writes (`files download --output`, `conformance --output`, `--report` of `migrate`,
/// `export`, `import`, `verify`), so that the option never replaces what its path points at.
///
/// # Contract
/// - A regular file, or a path where nothing is: the bytes go to a temporary file beside it (created anew with
///   `mode`, the umask applies, no symbolic link followed), renamed over the path by ``commit(sync:)``: the file is
///   whole or as it was before. ``discard()`` removes the temporary file.
/// - A device, a FIFO (anything that is neither a regular file nor a directory): written through, as shell
///   redirection does (`> /dev/null`, `> fifo`); the node itself is never replaced or removed.
/// - A symbolic link is followed (as shell redirection does): what it points at is written as above, and the link
///   stays a link. A link that points nowhere is refused (`localIO`), nothing is created.
/// - A directory is refused, and a missing parent folder is never created: both are `localIO` naming the path
///   and `what`, and nothing is created. Exit status 7.
final class OutputFile: @unchecked Sendable {
    /// The path as given (for messages).
    let path: String
    /// What is written, for messages: "the report", "the download".
    let what: String
    /// The temporary file renamed over ``destination`` at commit, or `nil` when the path is written through.
    private let temporary: String?
    /// Where the bytes end up: the path, or what its symbolic link points at.
    private let destination: String
    private var fd: Int32
    private var written: Int64 = 0
    private let lock = NSLock()

    /// Whether the path is written through (a device or a FIFO) rather than replaced by rename.
    var writesThrough: Bool { temporary == nil }

    init(path: String, what: String, mode: mode_t) throws(MBaaSError) {
        self.path = path
        self.what = what
        func failure(_ reason: String) -> MBaaSError { MBaaSError(.localIO, "cannot write \(what) \(path): \(reason)") }
        var destination = path
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & Self.typeMask == Self.symbolicLink {
            guard stat(path, &info) == 0, let resolved = realpath(path, nil) else {
                throw failure("it is a symbolic link to \(Self.linkTarget(path)), which does not exist (a link is followed, never replaced; create the file it points at or give another path)")
            }
            destination = String(cString: resolved)
            free(resolved)
        } else if lstat(path, &info) != 0 {
            let e = errno
            guard e == ENOENT else { throw failure(String(cString: strerror(e))) }
            info = stat()   // nothing there: a new regular file
            info.st_mode = Self.regular
        }
        self.destination = destination
        switch info.st_mode & Self.typeMask {
        case Self.directory:
            throw failure("it is a directory")
        case Self.regular:
            let url = URL(fileURLWithPath: destination)
            let folder = url.deletingLastPathComponent().path
            var folderInfo = stat()
            guard stat(folder, &folderInfo) == 0 else {
                let reason = String(cString: strerror(errno))
                throw failure("the folder \(folder): \(reason) (folders are not created; make it first)")
            }
            guard folderInfo.st_mode & Self.typeMask == Self.directory else { throw failure("\(folder) is not a folder") }
            let temporary = url.deletingLastPathComponent()
                .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp").path
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            guard fd >= 0 else { throw failure(String(cString: strerror(errno))) }
            self.temporary = temporary
        default:
            // A device, a FIFO: opened as `>` opens it (a FIFO waits for its reader), never replaced.
            fd = open(destination, O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard fd >= 0 else { throw failure(String(cString: strerror(errno))) }
            self.temporary = nil
        }
    }

    // The file-type bits of `st_mode` (POSIX values, the same on Linux and Darwin).
    static let typeMask: mode_t = 0o170000
    static let regular: mode_t = 0o100000
    static let directory: mode_t = 0o040000
    static let symbolicLink: mode_t = 0o120000

    private static func linkTarget(_ path: String) -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: path)).map { "'\($0)'" } ?? "a missing file"
    }

    /// Appends bytes; a failure is `localIO` naming the path.
    func write(_ data: Data) throws(MBaaSError) {
        let failure: Int32? = lock.withLock {
            let e = Terminal.writeAll(fd, data)
            if e == nil { written += Int64(data.count) }
            return e
        }
        if let failure { throw MBaaSError(.localIO, "cannot write \(what) \(path): \(String(cString: strerror(failure)))") }
    }

    /// Completes the output: a regular file is synced (with `sync`), closed and renamed over its destination; a
    /// device or FIFO is closed. Returns the number of bytes written.
    @discardableResult
    func commit(sync: Bool = true) throws(MBaaSError) -> Int64 {
        let result: Result<Int64, MBaaSError> = lock.withLock {
            var failure: Int32 = 0
            if let temporary {
                if sync, fsync(fd) != 0 { failure = errno }
                if close(fd) != 0, failure == 0 { failure = errno }
                fd = -1
                if failure == 0, rename(temporary, destination) != 0 { failure = errno }
                if failure != 0 { unlink(temporary) }
            } else {
                if close(fd) != 0 { failure = errno }
                fd = -1
            }
            if failure != 0 {
                return .failure(MBaaSError(.localIO, "cannot write \(what) \(path): \(String(cString: strerror(failure)))"))
            }
            return .success(written)
        }
        return try result.get()
    }

    /// Abandons the output: the temporary file is removed (the destination is as it was); a device or FIFO is
    /// closed.
    func discard() {
        lock.withLock {
            if fd >= 0 { close(fd) }
            fd = -1
            if let temporary { unlink(temporary) }
        }
    }

    /// Writes all of `data` to `path` as the contract says.
    static func write(_ data: Data, to path: String, what: String, mode: mode_t) throws(MBaaSError) {
        let file = try OutputFile(path: path, what: what, mode: mode)
        do {
            try file.write(data)
            try file.commit()
        } catch {
            file.discard()
            throw error
        }
    }
}
