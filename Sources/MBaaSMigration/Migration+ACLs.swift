import Foundation
import MBaaSCore

// ACLs on the way: records' ACLs mapped through the id map, narrowed by the target, read apart from the source, or
// lost (and then refused unless allowed); files' ACLs likewise.

extension Migration {
    /// The ACL with user principals rewritten through the id map (unmapped ones kept, with a warning) and, for a
    /// target without roles, role and group grants left out (the record becomes more private, never less).
    func mapACL(_ acl: ACL, maps: Maps, className cls: String, sourceId: String, reporting: Bool) -> ACL {
        var mapped = ACL()
        mapped.entries.reserveCapacity(acl.entries.count)
        let roles = traits.roles
        for (principal, access) in acl.entries {
            if !roles, principal.isRoleOrGroup {
                if reporting {
                    box.update { $0.problem("ACL grants to roles and groups are left out: \(self.target.adapterName) has no roles\(self.noted(.roles))") }
                }
                continue
            }
            if case .user(let id) = principal {
                if let t = maps.users[id] { mapped.entries[.user(t)] = access } else {
                    mapped.entries[principal] = access
                    if reporting {
                        box.update { $0.warn(.init(kind: "acl", className: cls, sourceId: sourceId, detail: "ACL names user \(id), who was not migrated; kept as it was")) }
                    }
                }
            } else {
                mapped.entries[principal] = access
            }
        }
        return mapped
    }

    /// What the target stores for each distinct mapped ACL of `records` (targets with
    /// ``MBaaSCore/Capabilities/Feature/aclNarrowing`` only; empty for the others): its own form of the same grants,
    /// or a narrowed ACL. Each distinct ACL is asked for and its answer kept for the run (batches running at once may
    /// both ask); one whose answer changes someone's access (``grantsLess(_:than:)`` either way: access taken away, or
    /// the writing user's added) is a warning, once, naming
    /// the first record that has it. An ACL the target cannot answer for is left as it is (the write then says why it
    /// is refused).
    ///
    /// With `perRecordWidening`, an ACL the target would store wider (``widens(_:than:)``) is not warned of here: the
    /// caller fails or lists each record that has it (``aclLoss(_:maps:narrowed:)``).
    func narrowings(for records: [Record], maps: Maps, reporting: Bool, perRecordWidening: Bool = false) async -> [ACL: ACL] {
        guard traits.narrowsACLs else { return [:] }
        var out: [ACL: ACL] = [:]
        for r in records {
            guard let acl = r.acl else { continue }
            let mapped = mapACL(acl, maps: maps, className: r.className, sourceId: r.id ?? "", reporting: false)
            guard out[mapped] == nil else { continue }
            if let known = aclNarrowings.withLock({ $0[mapped] }) { out[mapped] = known; continue }
            guard let narrowed = try? await withRetry({ try await self.target.narrowedACL(mapped) }) else { continue }
            out[mapped] = narrowed
            // Said when someone's access changes (taken away, or the writer's own added), not for the same grants in
            // the target's own form.
            let changes = Self.grantsLess(narrowed, than: mapped) || Self.grantsLess(mapped, than: narrowed)
            let perRecord = perRecordWidening && Self.widens(narrowed, than: mapped)
            if aclNarrowings.withLock({ $0.updateValue(narrowed, forKey: mapped) == nil }), changes, reporting, !perRecord {
                box.update {
                    $0.warn(.init(kind: "acl", className: r.className, sourceId: r.id,
                                  detail: "ACL \(mapped.json.printed()) cannot be stored on \(self.target.adapterName): records with it are written with \(narrowed.json.printed()), which grants nobody else more"))
                }
            }
        }
        return out
    }

    /// Whether some principal of `acl` may do less under `narrowed` (its own grant or everyone's): the target took
    /// access away, not only wrote the same grants in its own form.
    static func grantsLess(_ narrowed: ACL, than acl: ACL) -> Bool {
        let everyone = narrowed.entries[.everyone]
        return acl.entries.contains { principal, access in
            let kept = narrowed.entries[principal]
            return (access.read && !(kept?.read ?? false) && !(everyone?.read ?? false))
                || (access.write && !(kept?.write ?? false) && !(everyone?.write ?? false))
        }
    }

    /// Whether the source's records are read without their ACL, which it reads apart
    /// (``MBaaSCore/Capabilities/Feature/aclRead``), and the target keeps ACLs.
    var readsRecordACLs: Bool { !source.capabilities.has(.acl) && source.capabilities.has(.aclRead) && traits.acl }

    /// Whether the source's records are read without their ACL, which it reads apart, and the target keeps none: each
    /// record's is read to tell those whose ACL would be lost (``aclLoss(_:maps:narrowed:)``).
    var readsRecordACLsForLoss: Bool { !source.capabilities.has(.acl) && source.capabilities.has(.aclRead) && !traits.acl }

    /// Whether an ACL opens a record to everyone anyway (read and write): a target that keeps no ACL loses nothing of it.
    static func opensToEveryone(_ acl: ACL) -> Bool {
        let everyone = acl.entries[.everyone]
        return everyone?.read == true && everyone?.write == true
    }

    /// Whether `stored` (what the target keeps for `acl`) grants more than `acl` to anyone but one user: the writing
    /// user may gain its own record on a store whose records belong to their writer
    /// (``MBaaSCore/ObjectStore/narrowedACL(_:)``); everyone, a role, a group or a second user may not.
    static func widens(_ stored: ACL, than acl: ACL) -> Bool {
        let everyone = acl.entries[.everyone]
        var gainers: [ACL.Principal] = []
        for (principal, access) in stored.entries {
            let had = acl.entries[principal]
            if (access.read && !(had?.read ?? false) && !(everyone?.read ?? false))
                || (access.write && !(had?.write ?? false) && !(everyone?.write ?? false)) { gainers.append(principal) }
        }
        return gainers.count > 1 || gainers.contains { if case .user = $0 { false } else { true } }
    }

    /// Why a source record's ACL would be lost on the target, or `nil`: a target without per-record ACLs loses every
    /// ACL not open to everyone (no ACL is open to everyone); a target that stores some ACLs narrowed loses one it would
    /// store wider (``widens(_:than:)``).
    func aclLoss(_ source: Record, maps: Maps, narrowed: [ACL: ACL]) -> String? {
        if !traits.acl {
            guard let acl = source.acl, !Self.opensToEveryone(acl) else { return nil }
            return "its ACL \(acl.json.printed([.sortedKeys])) cannot be kept: \(target.adapterName) does not enforce per-record ACLs, so the record would be readable by everyone there"
        }
        guard traits.narrowsACLs, let acl = source.acl else { return nil }
        let mapped = mapACL(acl, maps: maps, className: source.className, sourceId: source.id ?? "", reporting: false)
        guard let stored = narrowed[mapped], Self.widens(stored, than: mapped) else { return nil }
        return "its ACL \(mapped.json.printed([.sortedKeys])) would be stored on \(target.adapterName) as \(stored.json.printed([.sortedKeys])), which grants more"
    }

    /// The records with their ACLs read from the source (``MBaaSCore/ObjectStore/recordACLs(className:ids:)``, with
    /// retries; a batch whose read is refused is read again record by record, so that one refusal fails one record), and
    /// apart those whose ACL could not be read, with why: the read failed, or the record is gone. Cancellation is
    /// thrown.
    func withSourceACLs(_ records: [Record], className cls: String) async throws -> (records: [Record], failed: [(String, String)]) {
        let ids = records.compactMap(\.id)
        var acls: [String: ACL] = [:]
        var reasons: [String: String] = [:]
        func why(_ error: any Error) throws -> String {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            return "its ACL cannot be read on \(source.adapterName): \(MBaaSError.wrap(error))"
        }
        do { acls = try await withRetry { try await self.source.recordACLs(className: cls, ids: ids) } } catch {
            let reason = try why(error)
            // Still failing after the retries (the source unavailable, say): the whole batch fails with it, and the
            // next run tries again. A refusal (one record's ACL the caller may not read, say) fails that record alone:
            // the batch's are read again one by one, once each, since a refusal does not pass with retries.
            if isTransient(MBaaSError.wrap(error)) { return ([], ids.map { ($0, reason) }) }
            for id in ids {
                do { acls.merge(try await self.source.recordACLs(className: cls, ids: [id])) { a, _ in a } } catch {
                    reasons[id] = try why(error)
                }
            }
        }
        var out: [Record] = []
        var failed: [(String, String)] = []
        out.reserveCapacity(records.count)
        for var r in records {
            guard let id = r.id, let acl = acls[id] else {
                failed.append((r.id ?? "", r.id.flatMap { reasons[$0] } ?? "its ACL cannot be read on \(source.adapterName): the record is gone"))
                continue
            }
            r.acl = acl
            out.append(r)
        }
        return (out, failed)
    }

    /// The source's ACL of a file records link to: looked up in its file list (every file whose name starts with
    /// this one, in whatever order the store lists them) where the source keeps and lists file ACLs
    /// (``MBaaSCore/Capabilities/Feature/fileACLListing``), or read on its own where the store reads them per file
    /// (``MBaaSCore/Capabilities/Feature/fileACLRead``); a file attached to a record has one of its own only where
    /// the source's attachments have ACLs (``MBaaSCore/Capabilities/Feature/attachmentACL``). A file the list does not
    /// show is `notFound`: the caller fails it rather than upload it without the ACL it may have.
    func sourceFileACL(_ ref: FileReference) async throws -> ACL? {
        guard source.capabilities.has(.fileACL), ref.attachment == nil || source.capabilities.has(.attachmentACL) else { return nil }
        if source.capabilities.has(.fileList), source.capabilities.has(.fileACLListing) {
            let listed = try await withRetry { try await self.source.listFiles(prefix: ref.name, limit: nil) }
            guard let info = listed.first(where: { $0.reference.name == ref.name }) else {
                throw MBaaSError(.notFound, "\(source.adapterName) does not list the file, so its ACL is unknown")
            }
            return info.acl
        }
        return try await readFileACL(ref)
    }

    /// Whether the source's file ACLs are read one file at a time: it keeps them, and reads but does not list them.
    var readsFileACLs: Bool {
        let c = source.capabilities
        return c.has(.fileACL) && c.has(.fileACLRead) && !(c.has(.fileList) && c.has(.fileACLListing))
    }

    /// A file's ACL read on its own (``MBaaSCore/FileStore/fileACL(_:)``) where the source reads them per file; `nil`
    /// where it cannot (the plan says its files go without theirs).
    func readFileACL(_ ref: FileReference) async throws -> ACL? {
        guard readsFileACLs else { return nil }
        return try await withRetry { try await self.source.fileACL(ref) }
    }

    /// Whether a file's ACL opens it to everyone anyway: copied without it into a store whose files have none, it
    /// loses nothing, and neither the plan nor the report says so.
    static func isOpen(_ acl: ACL) -> Bool { acl == .publicReadWrite }

    /// The ACL a copied file gets on the target: the source's, with user ids through the id map (as a record's; roles
    /// left out where the target has none), where the target keeps file ACLs. A store whose files have no ACLs
    /// (AppPot, Parse) gets the file without it: said per file, and once for the run (the plan says so); the file is
    /// then as open as every file of that store.
    func targetFileACL(_ given: ACL?, name: String, className: String, _ state: MigrationState) async throws -> ACL? {
        guard let given else { return nil }
        guard target.capabilities.has(.fileACL) else {
            if Self.isOpen(given) { return nil }
            box.update {
                $0.problem(self.fileACLProblem)
                $0.warn(.init(kind: "acl", className: className, sourceId: name, detail: "file '\(name)': its ACL is not kept"))
            }
            return nil
        }
        return try await mappedFileACL(given, name: name, className: className, reporting: true, state)
    }

    /// A file's ACL with user ids through the id map, as a record's is mapped (roles left out where the target has
    /// none): what the copy gives the target, and what verification expects there.
    func mappedFileACL(_ given: ACL, name: String, className: String, reporting: Bool, _ state: MigrationState) async throws -> ACL {
        let maps = try await offPool { try self.maps(for: [Record(className: className, acl: given)], state) }
        return mapACL(given, maps: maps, className: className, sourceId: name, reporting: reporting)
    }

    /// What the plan and the report say of file ACLs on a target without ``MBaaSCore/Capabilities/Feature/fileACL``.
    var fileACLProblem: String {
        "file ACLs: \(target.adapterName) does not keep them\(noted(.fileACL)); "
            + (options.aclLoss == .allow
                ? "files are copied without theirs, as open as the store's other files"
                : "a file whose ACL is not open to everyone would be as open as the store's other files, so it is not copied: it fails, named, and so do the records linking it (--acl-loss allow copies it without, with a warning per file)")
            + aclLossExceptions
    }

    /// Why a file with this ACL is not copied into the target's store, or `nil`: a store without
    /// ``MBaaSCore/Capabilities/Feature/fileACL`` would hold it as open as its other files, which loses an ACL not open
    /// to everyone, unless `allow` (then ``targetFileACL(_:name:className:_:)`` says so per file).
    func fileACLLoss(_ given: ACL?, allow: Bool) -> MBaaSError? {
        guard !allow, let given, !target.capabilities.has(.fileACL), !Self.isOpen(given) else { return nil }
        return MBaaSError(.unsupported, "its ACL \(given.json.printed([.sortedKeys])) cannot be kept: \(target.adapterName)'s files have none, so the copy would be as open as its other files (--acl-loss allow copies it without)")
    }
}
