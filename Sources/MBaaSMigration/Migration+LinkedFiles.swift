import Foundation
import MBaaSCore

// Files records link to or attach: copied once however many batches link them, then attached or linked.

extension Migration {
    /// The state's key of a source file: its name, or for an attachment its record, field and name.
    static func fileKey(_ ref: FileReference) -> String {
        ref.attachment.map { "\($0.className)/\($0.objectId)/\($0.field)/\(ref.name)" } ?? ref.name
    }

    /// Copies one source file into the target's store, once however many batches link it at the same moment (they
    /// share the copy): what it came to (``copyFileOnce(_:key:linked:_:)``); a failure is remembered for the run.
    func copySharedFile(
        _ ref: FileReference, key: String, linked: Bool, allowACLLoss: Bool, _ state: MigrationState
    ) async throws -> LinkedFileCopy {
        try await fileCopies.once(key) { try await self.copyFileOnce(ref, key: key, linked: linked, allowACLLoss: allowACLLoss, state) }
    }

    /// Reports a record linking a file the source's file store does not have.
    func warnMissingFile(_ ref: FileReference, className: String, sourceId: String?) {
        box.update {
            $0.warn(.init(kind: "sourceFile", className: className, sourceId: sourceId,
                         detail: "file '\(ref.name)' is not in the source's file store; the field keeps its value"))
        }
    }

    /// The state's class name for the in-flight marks of linked files.
    static let linkedFiles = "(linked files)"

    /// One file's copy. Its mark is committed before the upload and cleared with the file's record: a run killed in
    /// between leaves it, and the next run adopts the target's file with that name and content instead of uploading
    /// it again (where the target can list its files; a store whose names are unique answers `duplicate`, which is
    /// resolved the same way).
    ///
    /// ``LinkedFileCopy/missing`` when the source does not have the file (its callers report it, each for its own
    /// record); ``LinkedFileCopy/failed(_:)`` when the source cannot read it or list it (for its ACL), a look-up of
    /// an earlier run's upload fails, or the target refuses it after retries
    /// (counted here, once for the run; each caller fails its own records). Only cancellation and the state's own
    /// errors end the run.
    ///
    /// A file whose ACL the target's store cannot hold fails (``fileACLLoss(_:allow:)``), unless `allowACLLoss`.
    func copyFileOnce(
        _ ref: FileReference, key: String, linked: Bool, allowACLLoss: Bool, _ state: MigrationState
    ) async throws -> LinkedFileCopy {
        // The state keys files in SQLite, where a NUL would cut the key short (two files, one copy).
        do throws(MBaaSError) {
            try StoreValidation.noNUL(key, "file key")
            try StoreValidation.noNUL(ref.name, "file name")
        } catch {
            box.update { $0.files.read += 1 }
            return .failed(try fileFailed(error, ref.name, "cannot be keyed", className: Self.linkedFiles, sourceId: key))
        }
        if let copied = try await offPool({ try state.copiedFile(key) }) { return .copied(copied.target) }
        box.update { $0.files.read += 1 }
        func failed(_ error: any Error, _ what: String) throws -> LinkedFileCopy {
            .failed(try fileFailed(error, ref.name, what, className: Self.linkedFiles, sourceId: key))
        }
        let data: Data
        do { data = try await withRetry { try await self.source.download(ref) } } catch let e as MBaaSError where e.kind == .notFound {
            return .missing
        } catch {
            return try failed(error, "cannot be read")
        }
        let size = Int64(data.count)
        let sha = sha256Hex(data)
        func record(_ stored: FileReference) async throws {
            let copied = MigrationState.CopiedFile(sourceName: key, target: stored, sha256: sha, size: size, linked: linked)
            try await offPool { try state.recordFile(copied, clearingPendingIn: Self.linkedFiles) }
        }
        if try await offPool({ try state.isPending(.file, className: Self.linkedFiles, sourceId: key) }) {
            // An earlier run's upload may have reached the target: adopted, not uploaded twice. A target that cannot
            // be asked fails this file alone, as a refused upload does.
            let existing: FileReference?
            do { existing = try await findCopiedFile(ref.name, size: size, sha256: sha) } catch {
                return try failed(error, "cannot be looked up on \(target.adapterName)")
            }
            if let existing {
                try await record(existing)
                box.update { $0.files.skipped += 1 }
                return .copied(existing)
            }
        }
        // Its own ACL in the source's store, found before anything is marked: a file whose ACL cannot be found is not
        // uploaded at all (without one it would be open to everyone on most stores).
        let sourceACL: ACL?
        do { sourceACL = try await sourceFileACL(ref) } catch {
            return try failed(error, "cannot be looked up on \(source.adapterName) (for its ACL)")
        }
        if let refusal = fileACLLoss(sourceACL, allow: allowACLLoss) { return try failed(refusal, "is not copied") }
        try await offPool { try state.addPending(.file, className: Self.linkedFiles, sourceIds: [key]) }
        let acl = try await targetFileACL(sourceACL, name: ref.name, className: Self.linkedFiles, state)
        let upload = FileUpload(name: ref.name, source: .data(data), contentType: ref.contentType ?? guessContentType(forFileName: ref.name),
                                acl: acl)
        let stored: FileReference
        do {
            do { stored = try await uploadAsTargetNames(upload) } catch let e as MBaaSError where e.kind == .duplicate {
                guard let existing = try await findCopiedFile(ref.name, size: size, sha256: sha) else { throw e }
                stored = existing
            }
        } catch {
            // Its in-flight mark stays: the next run looks for it on the target before uploading it again.
            return try failed(error, "cannot be copied to \(target.adapterName)")
        }
        try await record(stored)
        box.update { $0.files.written += 1 }
        return .copied(stored)
    }

    /// Attaches the files of the records written in phase 1 (targets with ``Capabilities/Feature/fileAttachment``).
    func copyAttachments(className cls: String, targetClass: String, _ state: MigrationState) async throws {
        var after = ""
        var announced = false
        while true {
            // A page at a time, so memory stays flat however many records link files.
            let page = after
            let todo = try await offPool { try state.attachments(className: cls, done: false, after: page, limit: 500) }
            guard let last = todo.last else { break }
            after = last.sourceId
            if !announced { observer(.phase("attachments")); announced = true }
            let sourceIds = Array(Set(todo.map(\.sourceId)))
            let ids = try await offPool { try state.mapped(.record, className: cls, sourceIds: sourceIds) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                var inFlight = 0
                for a in todo {
                    guard let targetId = ids[a.sourceId] else { continue }
                    if inFlight >= options.fileCopiesInFlight { try await group.next(); inFlight -= 1 }
                    group.addTask { try await self.attach(a, targetClass: targetClass, targetId: targetId, state) }
                    inFlight += 1
                }
                try await group.waitForAll()
            }
        }
    }

    /// Copies one attachment; a failure is reported for its record (and tried again by the next run), never the end
    /// of the run.
    func attach(_ a: MigrationState.Attachment, targetClass: String, targetId: String, _ state: MigrationState) async throws {
        box.update { $0.files.read += 1 }
        let data: Data
        do { data = try await withRetry { try await self.source.download(a.ref) } } catch let e as MBaaSError where e.kind == .notFound {
            // Keep what the source held (a file name that points nowhere) rather than lose it, where the field can hold it.
            let original = RecordUpdate(changes: [a.field: .set(a.original)])
            var kept = "the field keeps its value"
            var outcome = MigrationState.keptOriginal
            do { _ = try await withRetry { try await self.target.update(className: targetClass, id: targetId, original) } } catch {
                kept = "the target's field cannot hold the name (\(MBaaSError.wrap(error).message)), so it stays empty"
                outcome = MigrationState.droppedOriginal
            }
            let done = outcome
            try await offPool { try state.attachmentDone(a, sha256: nil, size: nil, targetName: done) }
            box.update {
                $0.warn(.init(kind: "sourceFile", className: a.className, sourceId: a.sourceId,
                             detail: "file '\(a.ref.name)' (field \(a.field)) is not in the source's file store; \(kept)"))
            }
            return
        } catch {
            box.update {
                $0.files.failed += 1
                $0.add(.init(kind: "failed", className: a.className, sourceId: a.sourceId, detail: "file '\(a.ref.name)' cannot be read: \(MBaaSError.wrap(error))"))
            }
            return
        }
        // A file of the source's separate store keeps its own ACL where an attachment can have one; elsewhere it is
        // reachable as its record is, which is said. Its ACL not found, it is not attached (the next run tries again).
        var acl: ACL?
        if target.capabilities.has(.attachmentACL) {
            let own: ACL?
            do { own = try await sourceFileACL(a.ref) } catch {
                _ = try fileFailed(error, a.ref.name, "cannot be looked up on \(source.adapterName) (for its ACL), so it was not attached (field \(a.field))",
                                   className: a.className, sourceId: a.sourceId)
                return
            }
            if let refusal = fileACLLoss(own, allow: allowsACLLoss(a.className)) {
                box.update {
                    $0.files.failed += 1
                    $0.add(.init(kind: "failed", className: a.className, sourceId: a.sourceId, detail: "file '\(a.ref.name)' (field \(a.field)) is not attached: \(refusal)"))
                }
                return
            }
            acl = try await targetFileACL(own, name: a.ref.name, className: a.className, state)
        } else if let own = try await ownACLDropped(a) {
            // Attached, it would be reachable as its record is, which grants more than its own ACL: not attached (the
            // next run tries again), unless the class allows the loss.
            let detail = "file '\(a.ref.name)' (field \(a.field)): attached to its record on \(target.adapterName), it is reachable as the record is; its own ACL \(own.json.printed([.sortedKeys])) is not kept"
            guard allowsACLLoss(a.className) else {
                box.update {
                    $0.files.failed += 1
                    $0.add(.init(kind: "failed", className: a.className, sourceId: a.sourceId,
                                 detail: "\(detail), so it was not attached (--acl-loss allow attaches it)"))
                }
                return
            }
            box.update {
                $0.problem(self.attachedFileACLProblem)
                $0.warn(.init(kind: "acl", className: a.className, sourceId: a.sourceId, detail: detail))
            }
        }
        let upload = FileUpload(name: Self.attachmentUploadName(a.ref, className: a.className, sourceId: a.sourceId), source: .data(data),
                                contentType: a.ref.contentType ?? guessContentType(forFileName: a.ref.name),
                                acl: acl, attachment: FileAttachment(className: targetClass, objectId: targetId, field: a.field))
        do {
            let stored = try await uploadAsTargetNames(upload)
            let (sha, size, name) = (sha256Hex(data), Int64(data.count), Value.file(stored).json.printed())
            try await offPool { try state.attachmentDone(a, sha256: sha, size: size, targetName: name) }
            box.update { $0.files.written += 1 }
        } catch {
            box.update {
                $0.files.failed += 1
                $0.add(.init(kind: "failed", className: a.className, sourceId: a.sourceId, detail: "file '\(a.ref.name)' cannot be attached: \(MBaaSError.wrap(error))"))
            }
        }
    }

    /// The name an attachment is uploaded under: the source's, without the `<Class>/<id>/<field>/` that a store keeping
    /// attachments under their record put before it (its own attachment's, or the record's class and id with any
    /// field), since the target adds its own: a name does not grow a prefix per hop. Any other name as it is.
    static func attachmentUploadName(_ ref: FileReference, className: String, sourceId: String) -> String {
        if let at = ref.attachment {
            let prefix = "\(at.className)/\(at.objectId)/\(at.field)/"
            if ref.name.hasPrefix(prefix), ref.name.count > prefix.count { return String(ref.name.dropFirst(prefix.count)) }
        }
        let prefix = "\(className)/\(sourceId)/"
        guard ref.name.hasPrefix(prefix) else { return ref.name }
        let rest = ref.name.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), rest.index(after: slash) < rest.endIndex else { return ref.name }
        return String(rest[rest.index(after: slash)...])
    }

    /// A file with an ACL of its own attached to its record on a target without
    /// ``MBaaSCore/Capabilities/Feature/attachmentACL``: there it is reachable as its record is, so its own ACL is not
    /// kept. That loses something for a file of the source's separate store whose ACL is not open to everyone, and for
    /// an attachment whose own ACL (where the source's attachments have one) grants someone less than its record's.
    /// A file whose ACL cannot be looked up is said as such (and attached). Returns the own ACL that would not be kept, for the caller to fail the file or say so
    /// (``allowsACLLoss(_:)``); `nil` where nothing is lost.
    func ownACLDropped(_ a: MigrationState.Attachment) async throws -> ACL? {
        // Attached on the source without an ACL of its own: it followed its record there as well.
        if a.ref.attachment != nil && !source.capabilities.has(.attachmentACL) { return nil }
        let own: ACL?
        do { own = try await sourceFileACL(a.ref) } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            box.update {
                $0.warn(.init(kind: "acl", className: a.className, sourceId: a.sourceId,
                              detail: "file '\(a.ref.name)' (field \(a.field)): its own ACL cannot be looked up on \(self.source.adapterName) (\(MBaaSError.wrap(error))); attached to its record, it is reachable as the record is"))
            }
            return nil
        }
        guard let own, !Self.isOpen(own) else { return nil }
        if a.ref.attachment != nil {
            let record: Record
            do { record = try await withRetry { try await self.source.get(className: a.className, id: a.sourceId) } } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                box.update {
                    $0.warn(.init(kind: "acl", className: a.className, sourceId: a.sourceId,
                                  detail: "file '\(a.ref.name)' (field \(a.field)): its record cannot be read on \(self.source.adapterName) to compare its ACL with the file's own \(own.json.printed([.sortedKeys])) (\(MBaaSError.wrap(error))); attached to its record, it is reachable as the record is"))
                }
                return nil
            }
            // No ACL on a record is access for everyone.
            guard Self.grantsLess(own, than: record.acl ?? .publicReadWrite) else { return nil }
        }
        return own
    }

    /// What the plan and the report say where files records link to are attached to their records on the target
    /// while the source's files have ACLs of their own.
    var attachedFileACLProblem: String {
        "file ACLs: files records link to are attached to their records on \(target.adapterName) and reachable as the record is; "
            + (options.aclLoss == .allow
                ? "their own ACLs are not kept"
                : "one whose own ACL grants less than its record's is not attached: it fails, named (--acl-loss allow attaches it without, with a warning per file)")
            + (target.capabilities.has(.fileACL) && target.capabilities.has(.files) ? " (files no record links to keep theirs)" : "")
            + aclLossExceptions
    }

    /// Counts and lists one file that could not be copied, and returns the error as the report has it; cancellation
    /// (the error, or a cancelled task) is thrown instead: it ends the run.
    func fileFailed(_ error: any Error, _ name: String, _ what: String, className: String, sourceId: String) throws -> MBaaSError {
        if error is CancellationError { throw error }
        if Task.isCancelled { throw CancellationError() }
        let e = MBaaSError.wrap(error)
        box.update {
            $0.files.failed += 1
            $0.add(.init(kind: "failed", className: className, sourceId: sourceId, detail: "file '\(name)' \(what): \(e)"))
        }
        return e
    }

    /// Uploads a file to the target. A name with `/` (a Local attachment's, `Class/id/field/name`) that the target
    /// refuses as a name (`invalidRequest` or `unsupported`, as NCMB, Parse and AppPot do) is uploaded again with each
    /// `/` as `_`: the copy's reference, which the record's link, the state and verification keep, carries the name the
    /// target took. Transient failures are retried.
    func uploadAsTargetNames(_ upload: FileUpload) async throws -> FileReference {
        do { return try await withRetry { try await self.target.upload(upload) } } catch let e as MBaaSError
            where upload.name.contains("/") && [.invalidRequest, .unsupported].contains(e.kind)
        {
            var renamed = upload
            renamed.name = Self.flatFileName(upload.name)
            let flat = renamed
            return try await withRetry { try await self.target.upload(flat) }
        }
    }

    /// A file name with each `/` as `_` (`Note/n1/photo/a.png` → `Note_n1_photo_a.png`).
    static func flatFileName(_ name: String) -> String { name.replacingOccurrences(of: "/", with: "_") }

    /// A file of the target's store with this content, named like `name` (targets may add a suffix to a name).
    func findCopiedFile(_ name: String, size: Int64, sha256: String) async throws -> FileReference? {
        guard target.capabilities.has(.fileList) else { return nil }
        let stem = (name as NSString).deletingPathExtension
        for candidate in try await withRetry({ try await self.target.listFiles(prefix: stem, limit: 100) })
        where candidate.reference.size.map({ $0 == size }) ?? true {
            let data = try await withRetry { try await self.target.download(candidate.reference) }
            if Int64(data.count) == size && sha256Hex(data) == sha256 { return candidate.reference }
        }
        return nil
    }
}

/// What copying one linked file came to.
enum LinkedFileCopy: Sendable {
    /// In the target's store (copied now, or by an earlier batch or run).
    case copied(FileReference)
    /// Not in the source's file store.
    case missing
    /// It could not be copied (the source could not read or list it, or the target refused it, after retries): the
    /// records linking it fail, and the next run tries again.
    case failed(MBaaSError)
}

/// Copies in progress, by key: a caller that finds one running waits for it instead of starting another. An entry
/// lives only while its copy runs (the copy records its result in the state first, where later callers find it);
/// a copy that failed is remembered for the rest of the run, so that later batches linking the file fail their
/// records without asking again (the next run does).
final class SharedFileCopies: Sendable {
    private let running = Locked<(tasks: [String: Task<LinkedFileCopy, any Error>], failed: [String: MBaaSError])>(([:], [:]))

    /// Whether the copy of `key` failed in this run.
    func hasFailed(_ key: String) -> Bool { running.withLock { $0.failed[key] != nil } }

    func once(_ key: String, _ body: @escaping @Sendable () async throws -> LinkedFileCopy) async throws -> LinkedFileCopy {
        let task = running.withLock { running in
            if let failed = running.failed[key] { return Task<LinkedFileCopy, any Error> { .failed(failed) } }
            if let task = running.tasks[key] { return task }
            // Created and entered under the lock: the task's own removal waits for the entry to exist.
            let task = Task {
                let outcome: LinkedFileCopy
                do { outcome = try await body() } catch {
                    self.running.withLock { $0.tasks[key] = nil }
                    throw error
                }
                self.running.withLock {
                    $0.tasks[key] = nil
                    if case .failed(let e) = outcome { $0.failed[key] = e }
                }
                return outcome
            }
            running.tasks[key] = task
            return task
        }
        // A cancelled caller (its task group failed) cancels the copy rather than wait for its retries.
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }
}
