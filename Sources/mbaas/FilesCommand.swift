import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSLocal
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `mbaas files upload|download|delete|list`.
struct FilesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "files", abstract: "Upload, download, delete and list files.",
        subcommands: [Upload.self, Download.self, Delete.self, List.self, RepairACL.self])

    struct Upload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upload a local file and print its reference.",
            discussion: "With --attach Class/id/field the file is attached to that record's field.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Argument(help: "The local file to upload") var path: String
        @Option(parsing: .unconditional, help: "Name to store it under (default: the file's name)") var name: String?
        @Option(name: .customLong("content-type"), help: "Content type (default: guessed from the name)") var contentType: String?
        @Option(help: "Attach to a record field: Class/id/field") var attach: String?
        @Option(help: "ACL as neutral JSON") var acl: String?

        func run() async throws {
            try await runReportingErrors {
                let source = URL(fileURLWithPath: path)
                // A local file that cannot be read (missing, permissions, a directory) is local I/O: exit 7.
                guard access(source.path, R_OK) == 0 else {
                    throw MBaaSError(.localIO, "cannot read the local file \(path): \(String(cString: strerror(errno)))")
                }
                var isDirectory: ObjCBool = false
                guard !(FileManager.default.fileExists(atPath: source.path, isDirectory: &isDirectory) && isDirectory.boolValue) else {
                    throw MBaaSError(.localIO, "cannot read the local file \(path): it is a directory")
                }
                var attachment: FileAttachment?
                if let attach {
                    let parts = attach.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
                    guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
                        throw MBaaSError(.invalidRequest, "--attach takes Class/id/field, got '\(attach)'")
                    }
                    attachment = FileAttachment(className: parts[0], objectId: parts[1], field: parts[2])
                }
                let showProgress = isatty(STDERR_FILENO) != 0
                let upload = FileUpload(
                    name: name ?? source.lastPathComponent, source: .url(source), contentType: contentType,
                    acl: try parseACLArgument(acl), attachment: attachment,
                    progress: showProgress ? printProgress : nil)
                let reference = try await OpenedBackend.with(url, global) { try await $0.upload(upload) }
                if showProgress { Terminal.writeErr("\n") }
                emit(Value.file(reference).json, table: fileTable([FileInfo(reference: reference)]), format: global.resolvedFormat)
            }
        }
    }

    struct Download: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download a file (to stdout unless --output is given).",
            discussion: """
                The bytes are streamed (memory stays flat on the embedded store). With --output they go to a \
                temporary file next to the target, renamed over it when complete: a failed or interrupted download \
                leaves no partial target. A device or FIFO is written through (never replaced), a symbolic link is \
                followed, a missing folder is not created. Progress is shown on stderr when it is a terminal.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Argument(help: #"The stored file name, or its File value ({"__type":"File",…} as printed by upload or objects get), @FILE, or - for stdin"#) var name: String
        @Option(name: [.short, .long], help: "Write the bytes to this path") var output: String?

        func run() async throws {
            try await runReportingErrors { try await download() }
        }

        private func download() async throws {
            let showProgress = isatty(STDERR_FILENO) != 0
            let progress: (@Sendable (TransferProgress) -> Void)? = showProgress ? printDownloadProgress : nil
            let reference = try fileArgument(name)
            guard let output else {
                let write: @Sendable (Data) throws -> Void = { data in Terminal.writeOut(data) }
                _ = try await OpenedBackend.with(url, global, access: .read) { (backend: any Backend) async throws -> Bool in
                    try await backend.download(reference, into: write, progress: progress)
                    return true
                }
                if showProgress { Terminal.writeErr("\n") }
                return
            }
            let sink = try OutputFile(path: output, what: "the download", mode: 0o666)   // the umask applies
            let write: @Sendable (Data) throws -> Void = { data in try sink.write(data) }
            let size: Int64
            do {
                _ = try await OpenedBackend.with(url, global, access: .read) { (backend: any Backend) async throws -> Bool in
                    try await backend.download(reference, into: write, progress: progress)
                    return true
                }
                size = try sink.commit()
            } catch {
                sink.discard()
                throw error
            }
            if showProgress { Terminal.writeErr("\n") }
            emit(.object(["name": .string(reference.name), "path": .string(output), "size": .int(size)]),
                 table: "wrote \(size) bytes to \(output)", format: global.resolvedFormat)
        }
    }

    struct RepairACL: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "repair-acl",
            abstract: "Administrative: replace the ACL of a stored file nobody can reach (sqlite: only).",
            discussion: "Like `objects repair-acl`: only the database file's owner (or root), no session needed.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL (sqlite: only)") var url: String
        @Argument(help: "The stored file name") var name: String
        @Argument(help: #"The new ACL as neutral JSON, e.g. {"*":{"read":true}}"#) var acl: String

        func run() async throws {
            try await runReportingErrors {
                let newACL = try ACL(json: parseJSONArgument(acl, name: "acl"))
                let info = try await OpenedBackend.with(url, global, access: .write) { backend in
                    guard let local = backend as? LocalBackend else {
                        throw MBaaSError(.unsupported, "repair-acl works on the embedded sqlite: store only; other backends have their own administration (a master key, a console)")
                    }
                    try checkOwnsDatabaseFile(local.path)
                    return try await local.repairFileACL(name: name, acl: newACL)
                }
                emit(fileJSON(info), table: fileTable([info]), format: global.resolvedFormat)
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a stored file.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Argument(help: #"The stored file name, or its File value ({"__type":"File",…}), @FILE, or - for stdin"#) var name: String

        func run() async throws {
            try await runReportingErrors {
                let reference = try fileArgument(name)
                try await OpenedBackend.with(url, global, access: .write) { try await $0.deleteFile(reference) }
                emit(.object(["name": .string(reference.name), "deleted": true]), table: "deleted \(reference.name)", format: global.resolvedFormat)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List stored files, newest last.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Option(help: "Only names starting with this") var prefix: String?
        @Option(help: "At most this many") var limit: Int?

        func run() async throws {
            try await runReportingErrors {
                let files = try await OpenedBackend.with(url, global, access: .read) { try await $0.listFiles(prefix: prefix, limit: limit) }
                emit(.object(["results": .array(files.map(fileJSON))]),
                     table: fileTable(files) + "\n(\(files.count) file\(files.count == 1 ? "" : "s"))", format: global.resolvedFormat)
            }
        }
    }
}

/// Shows transfer progress on stderr (only when stderr is a terminal).
@Sendable func printProgress(_ p: TransferProgress) { printProgress(p, verb: "uploading") }

@Sendable func printDownloadProgress(_ p: TransferProgress) { printProgress(p, verb: "downloading") }

@Sendable func printProgress(_ p: TransferProgress, verb: String) {
    let percent = p.fractionCompleted.map { " \(Int($0 * 100))%" } ?? ""
    Terminal.writeErr("\r\(verb) \(p.completedBytes) bytes\(percent)")
}

/// A listed file: the neutral `File` value plus its dates and ACL.
func fileJSON(_ info: FileInfo) -> JSON {
    guard case .object(var o) = Value.file(info.reference).json else { return .null }
    if let c = info.createdAt { o["createdAt"] = .string(ISO8601.format(c)) }
    if let u = info.updatedAt { o["updatedAt"] = .string(ISO8601.format(u)) }
    if let acl = info.acl { o["acl"] = acl.json }
    return .object(o)
}

func fileTable(_ files: [FileInfo]) -> String {
    TextTable(headers: ["name", "size", "contentType", "createdAt"], rows: files.map { f in
        [f.reference.name, f.reference.size.map(String.init) ?? "", f.reference.contentType ?? "",
         f.createdAt.map(ISO8601.format) ?? ""]
    }).rendered
}
