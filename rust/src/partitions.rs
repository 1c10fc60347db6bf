//! The scan's files in partitions: whole files balanced by weight, a large file split
//! into byte ranges so that every core decodes a part of it.
//!
//! DuckDB writes a table of one `CREATE TABLE AS` as one file (TPC-H's `lineitem` at
//! scale factor 1: one 207 MB file), and a partition per file left one core decoding it
//! while the others waited. DataFusion's own Parquet scan splits such a file into byte
//! ranges, each reading the row groups whose first page starts inside it; the same is done
//! here, before the plan is handed over (the caller's optimizer cannot split a plan it
//! sees as a leaf). A file's deleted rows stay correct in every range: its row selection
//! (or its split into row groups, `deletes::RowGroupSelections`) is per row group, and the
//! range only skips whole row groups, as DataFusion's Parquet opener does.
//!
//! Each partition carries the statistics of its whole files (`statistics`); a partition
//! holding part of a file gets none (the rows of a byte range are not known before the
//! footer is read), the table's statistics stay exact.

use std::sync::Arc;

use datafusion::common::Statistics;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::FileGroup;

use crate::file::LakeFile;

/// How large files are split (DataFusion's `repartition_file_scans` and
/// `repartition_file_min_size`, as for its own Parquet tables).
#[derive(Debug, Clone, Copy)]
pub struct Splitting {
    pub enabled: bool,
    pub min_size: u64,
}

/// A file or a byte range of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// The file's position in the list given to `pieces`.
    pub file: usize,
    /// `[start, end)` of the file's bytes; `None`: the whole file.
    pub range: Option<(u64, u64)>,
    pub weight: u64,
}

/// `files` (their weights and sizes) as pieces for `partitions` partitions: a file heavier
/// than a partition's share, and at least `min_size` bytes, becomes ranges of about a
/// share each (at most `partitions`).
pub fn pieces(files: &[(u64, u64)], partitions: usize, splitting: Splitting) -> Vec<Piece> {
    let total: u64 = files.iter().map(|&(weight, _)| weight.max(1)).sum();
    let share = total.div_ceil(partitions.max(1) as u64).max(1);
    let mut out = Vec::with_capacity(files.len());
    for (index, &(weight, size)) in files.iter().enumerate() {
        let weight = weight.max(1);
        let split = splitting.enabled && partitions > 1 && size >= splitting.min_size.max(1);
        let count = if split && weight > share {
            weight.div_ceil(share).min(partitions as u64).min(size)
        } else {
            1
        };
        if count <= 1 {
            out.push(Piece {
                file: index,
                range: None,
                weight,
            });
            continue;
        }
        for i in 0..count {
            let (start, end) = (size * i / count, size * (i + 1) / count);
            out.push(Piece {
                file: index,
                range: Some((start, end)),
                weight: (weight / count).max(1),
            });
        }
    }
    out
}

/// `pieces` in up to `count` groups of about equal weight (heaviest first, each to the
/// lightest group so far); each group's pieces in file order.
pub fn balanced(pieces: &[Piece], count: usize) -> Vec<Vec<Piece>> {
    let mut ordered: Vec<&Piece> = pieces.iter().collect();
    ordered.sort_by_key(|p| std::cmp::Reverse(p.weight));
    let count = count.clamp(1, pieces.len().max(1));
    let mut groups: Vec<Vec<Piece>> = vec![Vec::new(); count];
    let mut loads = vec![0u64; count];
    for piece in ordered {
        let (target, _) = loads
            .iter()
            .enumerate()
            .min_by_key(|(_, load)| **load)
            .unwrap_or((0, &0));
        loads[target] += piece.weight;
        groups[target].push(*piece);
    }
    groups.retain(|g| !g.is_empty());
    for group in &mut groups {
        group.sort_by_key(|p| (p.file, p.range));
    }
    groups
}

/// The file groups of a scan of `files`: `part(i, file)` makes `files[i]`'s `PartitionedFile`,
/// `stats[i]` is file i's statistics; a group of whole files carries their sum.
pub fn file_groups(
    files: &[&LakeFile],
    stats: &[Arc<Statistics>],
    partitions: usize,
    splitting: Splitting,
    schema: &arrow::datatypes::Schema,
    part: impl Fn(usize, &LakeFile) -> PartitionedFile,
) -> Vec<FileGroup> {
    let sizes: Vec<(u64, u64)> = files.iter().map(|f| (f.weight(), f.size)).collect();
    let pieces = pieces(&sizes, partitions, splitting);
    balanced(&pieces, partitions)
        .into_iter()
        .map(|group| {
            let whole = group.iter().all(|p| p.range.is_none());
            let parts: Vec<PartitionedFile> = group
                .iter()
                .map(|piece| {
                    let file = part(piece.file, files[piece.file]);
                    match piece.range {
                        Some((start, end)) => file.with_range(start as i64, end as i64),
                        None => file.with_statistics(Arc::clone(&stats[piece.file])),
                    }
                })
                .collect();
            let mut group_of = FileGroup::new(parts);
            if whole {
                let sum = crate::statistics::merged(group.iter().map(|p| &stats[p.file]), schema);
                if let Some(sum) = sum {
                    group_of = group_of.with_statistics(Arc::new(sum));
                }
            }
            group_of
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ON: Splitting = Splitting {
        enabled: true,
        min_size: 100,
    };

    #[test]
    fn many_small_files_stay_whole() {
        let files = vec![(50, 50); 8];
        let pieces = pieces(&files, 2, ON);
        assert!(pieces.iter().all(|p| p.range.is_none()));
        let groups = balanced(&pieces, 2);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 4]);
    }

    #[test]
    fn one_large_file_is_split_into_ranges_covering_it_once() {
        let pieces = pieces(&[(1000, 1000)], 4, ON);
        assert_eq!(pieces.len(), 4);
        let ranges: Vec<(u64, u64)> = pieces.iter().map(|p| p.range.unwrap()).collect();
        assert_eq!(ranges, vec![(0, 250), (250, 500), (500, 750), (750, 1000)]);
        assert_eq!(balanced(&pieces, 4).len(), 4);
    }

    #[test]
    fn a_large_file_beside_small_ones_is_split_into_shares() {
        // 1,000 + 4 x 50 bytes over 2 partitions: a share is 600, the large file two halves
        let mut files = vec![(1000, 1000)];
        files.extend(vec![(50, 50); 4]);
        let pieces = pieces(&files, 2, ON);
        assert_eq!(pieces.iter().filter(|p| p.file == 0).count(), 2);
        let loads: Vec<u64> = balanced(&pieces, 2)
            .iter()
            .map(|g| g.iter().map(|p| p.weight).sum())
            .collect();
        assert_eq!(loads, vec![600, 600]);
    }

    #[test]
    fn files_below_the_minimum_size_or_with_splitting_off_stay_whole() {
        let small = Splitting {
            enabled: true,
            min_size: 2000,
        };
        assert_eq!(pieces(&[(1000, 1000)], 4, small).len(), 1);
        let off = Splitting {
            enabled: false,
            min_size: 1,
        };
        assert_eq!(pieces(&[(1000, 1000)], 4, off).len(), 1);
        assert_eq!(pieces(&[(1000, 1000)], 1, ON).len(), 1);
    }

    #[test]
    fn a_file_with_deletes_weighs_its_live_share_but_splits_by_bytes() {
        // half its rows deleted: weight 500 of 1,000 bytes, split over 2 by byte ranges
        let pieces = pieces(&[(500, 1000), (10, 10)], 2, ON);
        let ranges: Vec<_> = pieces.iter().filter_map(|p| p.range).collect();
        assert_eq!(ranges, vec![(0, 500), (500, 1000)]);
    }
}
