import KinetraceImpairment
import KinetraceSupport

/// The schedule walked on its own thread, a bounded distance ahead of the
/// sender: impairment draws, payload stamps and predicted replies are worked
/// out there, so the sender's time between deadlines goes to sending. At
/// 100,000 frames/s planning took a tenth of the sender's time.
///
/// The steps come out exactly as `ReplaySchedule.next()` gives them (the
/// shard's share only), in order; at most `batchesAhead` batches wait.
final class PlannerThread {
    typealias Step = ReplaySchedule.Step
    private let queue: BatchQueue<Step>
    private var thread: WorkerThread?
    private var batch: [Step] = []
    private var index = 0

    /// 256 steps a batch, 16 batches ahead: under a megabyte, and the lock is taken once every 256 sends.
    init(schedule: ReplaySchedule, share: @escaping (Step) -> Step?, batchSize: Int = 256, batchesAhead: Int = 16) {
        precondition(batchSize > 0)
        let queue = BatchQueue<Step>(capacity: batchesAhead)
        self.queue = queue
        var schedule = schedule
        thread = WorkerThread {
            var pending: [Step] = []
            pending.reserveCapacity(batchSize)
            while let whole = schedule.next() {
                guard let step = share(whole) else { continue }
                pending.append(step)
                if pending.count == batchSize {
                    guard queue.put(pending) else { return }
                    pending = []
                    pending.reserveCapacity(batchSize)
                }
            }
            if !pending.isEmpty { queue.put(pending) }
            queue.finish()
        }
    }

    /// The sender's next step; nil at the end of the schedule.
    func next() -> Step? {
        if index == batch.count {
            // Batches are never empty: a batch taken has a first step.
            guard let taken = queue.take() else { return nil }
            batch = taken
            index = 0
        }
        defer { index += 1 }
        return batch[index]
    }

    /// Stops planning (the sender is done, early or not) and waits for the thread.
    func stop() {
        queue.cancel()
        thread?.join()
        thread = nil
    }

    deinit { stop() }
}
