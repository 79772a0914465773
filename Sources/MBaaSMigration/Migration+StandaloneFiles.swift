import Foundation
import MBaaSCore

// The files stage: files no record links to, into the target's file store.

extension Migration {
    /// The state's class name for files no record links to.
    static let standaloneFiles = "(files)"

    /// Files that no record links to, into the target's file store.
    func copyStandaloneFiles(_ state: MigrationState) async throws {
        guard source.capabilities.has(.fileList) else { return }
        let files = try await withRetry { try await self.source.listFiles(prefix: nil, limit: nil) }
        // A file records link to that could not be copied for them is not tried again as one no record links to.
        // Nor is one linked only by records left unwritten for their ACL: it goes with them.
        let unwritten = unwrittenLinks.value
        let unattached = files.filter {
            $0.reference.attachment == nil && !fileCopies.hasFailed($0.reference.name) && !unwritten.contains($0.reference.name)
        }
        // The state keys files by name in SQLite, where a NUL would cut the name short (two files, one key): such a
        // file fails by itself, named, before the state is asked about it.
        var keyable: [FileInfo] = []
        for info in unattached {
            do throws(MBaaSError) { try StoreValidation.noNUL(info.reference.name, "file name") } catch {
                _ = try fileFailed(error, info.reference.name, "cannot be keyed", className: Self.standaloneFiles, sourceId: info.reference.name)
                continue
            }
            keyable.append(info)
        }
        let candidates = keyable
        let standalone = try await offPool {
            try candidates.filter { try state.copiedFile($0.reference.name) == nil && !state.isLinkedByAttachment($0.reference.name) }
        }
        guard !standalone.isEmpty else { return }
        guard target.capabilities.has(.files) else {
            box.update { $0.problem("\(standalone.count) files no record links to were not copied: \(target.adapterName) has no separate file store") }
            return
        }
        let pending = Set(try await offPool { try state.pending(.file, className: Self.standaloneFiles) })
        // Up to `fileConcurrency` at a time: one after another, each file's round trips set the pace.
        try await concurrently(standalone, limit: options.fileCopiesInFlight) { info in
            try await self.copyStandaloneFile(info, wasPending: pending.contains(info.reference.name), state)
        }
    }

    /// Copies one file no record links to. A failure to read, look up or upload it (the target refusing its name or
    /// its ACL, say) is counted and listed for that file, and the run goes on; cancellation and the state's own
    /// errors end the run.
    func copyStandaloneFile(_ info: FileInfo, wasPending: Bool, _ state: MigrationState) async throws {
        let name = info.reference.name
        func failed(_ error: any Error, _ what: String) throws {
            _ = try fileFailed(error, name, what, className: Self.standaloneFiles, sourceId: name)
        }
        let data: Data
        do { data = try await withRetry { try await self.source.download(info.reference) } } catch { return try failed(error, "cannot be read") }
        box.update { $0.files.read += 1 }
        let sha = sha256Hex(data)
        func record(_ stored: FileReference) async throws {
            let copied = MigrationState.CopiedFile(sourceName: name, target: stored, sha256: sha, size: Int64(data.count), linked: false)
            try await offPool { try state.recordFile(copied, clearingPendingIn: Self.standaloneFiles) }
        }
        // An upload an earlier run made just before it died (or that reached the target before a failure): the
        // target's file with this name, size and content is adopted, not uploaded twice.
        if wasPending {
            let existing: FileReference?
            do { existing = try await findCopiedFile(name, size: Int64(data.count), sha256: sha) } catch {
                return try failed(error, "cannot be looked up on \(target.adapterName)")
            }
            if let existing {
                try await record(existing)
                box.update { $0.files.skipped += 1 }
                return
            }
        }
        // Its ACL, where the listing does not carry it, read before anything is marked: a file whose ACL cannot be
        // read is not uploaded at all (without one it would be open to everyone on most stores).
        var given = info.acl
        if readsFileACLs {
            do { given = try await readFileACL(info.reference) } catch {
                return try failed(error, "cannot be looked up on \(source.adapterName) (for its ACL)")
            }
        }
        if let refusal = fileACLLoss(given, allow: options.aclLoss == .allow) { return try failed(refusal, "is not copied") }
        try await offPool { try state.addPending(.file, className: Self.standaloneFiles, sourceIds: [name]) }
        let acl = try await targetFileACL(given, name: name, className: Self.standaloneFiles, state)
        let upload = FileUpload(name: name, source: .data(data),
                                contentType: info.reference.contentType ?? guessContentType(forFileName: name), acl: acl)
        let stored: FileReference
        do {
            do { stored = try await withRetry { try await self.target.upload(upload) } } catch let e as MBaaSError where e.kind == .duplicate {
                guard let existing = try await findCopiedFile(name, size: Int64(data.count), sha256: sha) else { throw e }
                stored = existing
            }
        } catch {
            // Its in-flight mark stays: the next run looks for it on the target before uploading it again.
            return try failed(error, "cannot be copied to \(target.adapterName)")
        }
        try await record(stored)
        box.update { $0.files.written += 1 }
    }
}
