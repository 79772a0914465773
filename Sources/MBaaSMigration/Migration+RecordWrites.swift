import Foundation
import MBaaSCore

// The records stage's writes: creates with retries, and the look-up of writes an earlier run may have made.

extension Migration {
    struct CreateOutcome {
        var created: [String: String] = [:]
        var failed: [String: MBaaSError] = [:]
        /// Failed writes whose outcome is unknown (the last attempt may have been applied, and the target could not
        /// be asked): their in-flight mark must outlive this batch, so that the next run looks them up first.
        var unknown: [String] = []
    }

    /// Creates the records, retrying transient failures; a write whose outcome is unknown is looked up on the target
    /// before it is tried again.
    func createWithRetry(_ prepared: [Prepared], className cls: String) async throws -> CreateOutcome {
        var outcome = CreateOutcome()
        var remaining = prepared
        var attempt = 0
        while !remaining.isEmpty {
            var retry: [Prepared] = []
            var lastError: MBaaSError?
            do {
                let results = try await create(remaining.map(\.record))
                // An all-or-nothing batch with a failure applied nothing: one at a time finds the culprit.
                if target.capabilities.has(.atomicBatch), remaining.count > 1,
                   results.contains(where: { if case .failure(let e) = $0 { !isTransient(e) } else { false } })
                {
                    for p in remaining {
                        let single = try await createWithRetry([p], className: cls)
                        outcome.created.merge(single.created) { a, _ in a }
                        outcome.failed.merge(single.failed) { a, _ in a }
                        outcome.unknown += single.unknown
                    }
                    return outcome
                }
                for (p, result) in zip(remaining, results) {
                    switch result {
                    case .success(let r): outcome.created[p.sourceId] = r.id ?? p.record.id ?? ""
                    case .failure(let e):
                        if isTransient(e) { retry.append(p); lastError = e } else if Self.retriesWithoutId(e, p.record) {
                            var again = p
                            again.record.id = nil   // the target refused this id: let it make one
                            retry.append(again)
                        } else if e.kind == .duplicate, let found = try await findExisting(className: p.record.className, sourceIds: [p.key])[p.key] {
                            outcome.created[p.sourceId] = found
                        } else {
                            outcome.failed[p.sourceId] = e
                        }
                    }
                }
            } catch {
                let e = MBaaSError.wrap(error)
                guard isTransient(e) else {
                    // The call may have applied writes before it failed (a response that could not be read, a count
                    // that did not match): find them before anything is written again.
                    let found = try await findExistingRetrying(className: remaining[0].record.className, sourceIds: remaining.map(\.key))
                    for p in remaining { if let t = found[p.key] { outcome.created[p.sourceId] = t } }
                    remaining = remaining.filter { found[$0.key] == nil }
                    if remaining.count > 1 {
                        // A batch refused as a whole (an atomic batch, or a request error): one at a time finds the culprit.
                        for p in remaining {
                            let single = try await createWithRetry([p], className: cls)
                            outcome.created.merge(single.created) { a, _ in a }
                            outcome.failed.merge(single.failed) { a, _ in a }
                            outcome.unknown += single.unknown
                        }
                        return outcome
                    }
                    for p in remaining { outcome.failed[p.sourceId] = e }
                    return outcome
                }
                retry = remaining
                lastError = e
            }
            guard !retry.isEmpty else { break }
            attempt += 1
            if attempt >= options.maxAttempts {
                // The last attempt may have been applied before it failed (a timeout, a reset): ask once more. What
                // is found was written; what cannot be asked about stays unknown and keeps an in-flight mark.
                let found: [String: String]?
                do { found = try await findExisting(className: retry[0].record.className, sourceIds: retry.map(\.key)) } catch { found = nil }
                for p in retry {
                    if let t = found?[p.key] { outcome.created[p.sourceId] = t; continue }
                    outcome.failed[p.sourceId] = lastError ?? MBaaSError(.unavailable, "gave up after \(attempt) attempts")
                    if found == nil { outcome.unknown.append(p.sourceId) }
                }
                break
            }
            observer(.note("\(cls): retrying \(retry.count) writes (attempt \(attempt + 1)): \(lastError?.description ?? "")"))
            try await backoff(attempt: attempt, error: lastError)
            // The failed call may have written some records before it failed: find them first.
            let found = try await findExistingRetrying(className: retry.first!.record.className, sourceIds: retry.map(\.key))
            for p in retry { if let t = found[p.key] { outcome.created[p.sourceId] = t } }
            remaining = retry.filter { found[$0.key] == nil }
        }
        return outcome
    }

    /// Whether a create refused for `record` is written again without its id: only when the target said it refused
    /// the record's id (``MBaaSCore/MBaaSError/refusesRecordId``, set by the adapter), never on the wording of the
    /// message. Any other refusal fails the record as it is.
    static func retriesWithoutId(_ error: MBaaSError, _ record: Record) -> Bool {
        record.id != nil && error.refusesRecordId && [.invalidRequest, .unsupported].contains(error.kind)
    }

    /// One batch call when the target has batches, else one create at a time.
    func create(_ records: [Record]) async throws -> [BatchResult] {
        if target.capabilities.has(.batch) && target.capabilities.maxBatchSize > 0 {
            var results: [BatchResult] = []
            for start in stride(from: 0, to: records.count, by: target.capabilities.maxBatchSize) {
                let chunk = records[start..<min(start + target.capabilities.maxBatchSize, records.count)]
                let r = try await target.batch(chunk.map { .create($0) })
                guard r.count == chunk.count else {
                    throw MBaaSError(.decoding, "\(target.adapterName) answered \(r.count) results for a batch of \(chunk.count)")
                }
                results += r
            }
            return results
        }
        var results: [BatchResult] = []
        for r in records {
            do { results.append(.success(try await target.create(r))) } catch {
                let e = MBaaSError.wrap(error)
                if isTransient(e) && results.isEmpty { throw e }
                results.append(.failure(e))
            }
        }
        return results
    }

    func findExistingRetrying(className: String, sourceIds: [String]) async throws -> [String: String] {
        var attempt = 0
        while true {
            do { return try await findExisting(className: className, sourceIds: sourceIds) } catch {
                let e = MBaaSError.wrap(error)
                attempt += 1
                guard isTransient(e), attempt < options.maxAttempts else { throw e }
                try await backoff(attempt: attempt, error: e)
            }
        }
    }

    /// The target ids of records an earlier write may have created: by the source-id field, else by id where the
    /// target keeps ids.
    func findExisting(className: String, sourceIds: [String]) async throws -> [String: String] {
        guard !sourceIds.isEmpty else { return [:] }
        var found: [String: String] = [:]
        if let field = mapping.sourceIdField, target.capabilities.has(.operator(.in)) {
            for start in stride(from: 0, to: sourceIds.count, by: 50) {
                let part = Array(sourceIds[start..<min(start + 50, sourceIds.count)])
                let q = Query(className, predicate: .in(field, part.map(Value.string)), limit: part.count * 2)
                do {
                    for try await r in target.records(matching: q, pageSize: min(target.capabilities.maxPageSize, part.count * 2)) {
                        if let s = r.fields[field]?.stringValue, let id = r.id { found[s] = id }
                    }
                } catch let e as MBaaSError where e.kind == .notFound {
                    continue   // the class does not exist yet
                }
            }
            return found
        }
        if let bundle = target as? BundleBackend {
            return Dictionary(uniqueKeysWithValues: try await bundle.existingIds(className: className, among: Set(sourceIds)).map { ($0, $0) })
        }
        if target.capabilities.has(.clientIds) {
            for id in sourceIds {
                do { _ = try await target.get(className: className, id: id); found[id] = id } catch let e as MBaaSError where e.kind == .notFound {}
            }
            return found
        }
        box.update { $0.problem("\(target.adapterName) can neither query by '\(mapping.sourceIdField ?? "-")' nor keep ids: interrupted writes cannot be checked for duplicates") }
        return found
    }
}
