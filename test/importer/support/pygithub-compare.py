"""The same PyGithub calls against GitHub (the fake) and against forgesync's copy of it.

Usage: pygithub-compare.py <base_url> <owner/repo>   (the token in $PYGITHUB_TOKEN, never in argv)

Prints one JSON object: for each call, what PyGithub read (each object's raw
JSON as the answer gave it), or the error it raised. The test runs it once
against each server and compares the two, call by call. Lists keep their
items as listed (no lazy completion), single objects are read whole; URLs
are built by PyGithub from earlier answers, so every one must stay on the
server asked.
"""
import json
import os
import sys
from datetime import datetime

from github import Github, GithubException


def raw(obj):
    """What the answer gave for this object (no completion request)."""
    return obj._rawData


def items(paginated):
    return [raw(item) for item in paginated]


def main() -> None:
    base_url, full_name = sys.argv[1], sys.argv[2]
    g = Github(base_url=base_url, login_or_token=os.environ['PYGITHUB_TOKEN'], per_page=7, retry=None)
    repo = g.get_repo(full_name)
    results = {}

    def call(name, fn):
        try:
            results[name] = fn()
        except GithubException as error:
            results[name] = {'error': error.status, 'data': error.data}
        except Exception as error:  # a call PyGithub could not complete (e.g. an answer without the header it reads)
            results[name] = {'error': type(error).__name__, 'data': str(error)}

    issues = list(repo.get_issues(state='all'))
    numbers = sorted(i.number for i in issues)
    plain = [i for i in issues if i.pull_request is None]
    pull_numbers = sorted(i.number for i in issues if i.pull_request is not None)
    first_issue = repo.get_issue(plain[0].number)
    commented = next((i for i in plain if i.comments > 0), first_issue)
    assignee = next((i.assignees[0].login for i in issues if i.assignees), None)
    author = plain[0].user.login
    labels = repo.get_labels()
    milestones = list(repo.get_milestones(state='all'))
    releases = list(repo.get_releases())
    default_branch = repo.default_branch
    head_sha = repo.get_branch(default_branch).commit.sha

    call('repo', lambda: repo.raw_data)
    call('issues_all', lambda: [raw(i) for i in issues])
    call('issues_total', lambda: repo.get_issues(state='all').totalCount)
    call('issues_open_sorted', lambda: items(repo.get_issues(sort='comments', direction='asc')))
    call('issues_since', lambda: items(repo.get_issues(state='all', since=datetime(2019, 3, 1))))
    call('issues_label', lambda: items(repo.get_issues(state='all', labels=[labels[0]])))
    if milestones:
        call('issues_milestone', lambda: items(repo.get_issues(state='all', milestone=milestones[0])))
    call('issues_milestone_none', lambda: items(repo.get_issues(state='all', milestone='none')))
    call('issues_milestone_any', lambda: items(repo.get_issues(state='all', milestone='*')))
    if assignee:
        call('issues_assignee', lambda: items(repo.get_issues(state='all', assignee=assignee)))
    call('issues_assignee_none', lambda: items(repo.get_issues(state='all', assignee='none')))
    call('issues_creator', lambda: items(repo.get_issues(state='all', creator=author)))
    call('issue', lambda: first_issue.raw_data)
    call('issue_comments', lambda: items(commented.get_comments()))
    call('issue_events', lambda: items(commented.get_events()))
    call('issue_labels', lambda: items(first_issue.get_labels()))
    call('issue_timeline', lambda: items(commented.get_timeline()))
    call('repo_comments', lambda: items(repo.get_issues_comments(sort='updated', direction='desc')))
    call('repo_events', lambda: items(repo.get_issues_events()))
    comments = list(commented.get_comments())
    if comments:
        call('comment', lambda: commented.get_comment(comments[0].id).raw_data)
    events = list(repo.get_issues_events())
    if events:
        call('event', lambda: repo.get_issues_event(events[0].id).raw_data)
    call('missing_issue', lambda: repo.get_issue(numbers[-1] + 50).raw_data)

    call('pulls_all', lambda: items(repo.get_pulls(state='all')))
    call('pulls_popular', lambda: items(repo.get_pulls(state='all', sort='popularity', direction='desc')))
    call('pulls_long_running', lambda: items(repo.get_pulls(sort='long-running')))
    call('pulls_base', lambda: items(repo.get_pulls(state='all', base=default_branch)))
    if pull_numbers:
        pull = repo.get_pull(pull_numbers[0])
        call('pull', lambda: pull.raw_data)
        call('pull_head_filter', lambda: items(repo.get_pulls(state='all', head=f"{pull.head.user.login}:{pull.head.ref}")))
        call('pull_commits', lambda: items(pull.get_commits()))
        call('pull_files', lambda: items(pull.get_files()))
        call('pull_reviews', lambda: items(pull.get_reviews()))
        call('pull_review_comments', lambda: items(pull.get_review_comments()))
        users, teams = pull.get_review_requests()
        call('pull_review_requests', lambda: {'users': items(users), 'teams': items(teams)})
        reviews = list(pull.get_reviews())
        if reviews:
            call('review', lambda: pull.get_review(reviews[0].id).raw_data)
        review_comments = list(repo.get_pulls_review_comments())
        if review_comments:
            call('review_comment', lambda: pull.get_review_comment(review_comments[0].id).raw_data)
    call('repo_review_comments', lambda: items(repo.get_pulls_review_comments(sort='created', direction='desc')))

    call('labels', lambda: items(labels))
    call('label', lambda: repo.get_label(labels[0].name.upper()).raw_data)
    call('milestones', lambda: items(repo.get_milestones(state='all', sort='due_on', direction='desc')))
    call('milestones_completeness', lambda: items(repo.get_milestones(state='all', sort='completeness')))
    if milestones:
        call('milestone', lambda: repo.get_milestone(milestones[0].number).raw_data)
    call('releases', lambda: [raw(r) for r in releases])
    call('latest_release', lambda: repo.get_latest_release().raw_data)
    if releases:
        call('release_by_id', lambda: repo.get_release(releases[0].id).raw_data)
        published = next(r for r in releases if not r.draft)
        call('release_by_tag', lambda: repo.get_release(published.tag_name).raw_data)
    call('collaborators', lambda: items(repo.get_collaborators()))
    for affiliation in ('direct', 'outside'):
        call('collaborators_' + affiliation, lambda affiliation=affiliation: items(repo.get_collaborators(affiliation=affiliation)))

    call('branches', lambda: items(repo.get_branches()))
    call('branch', lambda: repo.get_branch(default_branch).raw_data)
    call('tags', lambda: items(repo.get_tags()))
    call('commits', lambda: items(repo.get_commits()))
    call('commit', lambda: repo.get_commit(head_sha).raw_data)
    commits = list(repo.get_commits())
    if len(commits) > 3:
        call('compare', lambda: repo.compare(commits[3].sha, commits[0].sha).raw_data)
    call('git_refs', lambda: items(repo.get_git_refs()))
    call('git_ref', lambda: repo.get_git_ref(f'heads/{default_branch}').raw_data)
    call('git_commit', lambda: repo.get_git_commit(head_sha).raw_data)
    tree = repo.get_git_tree(head_sha, recursive=True)
    call('git_tree', lambda: tree.raw_data)
    blob = next((entry for entry in tree.tree if entry.type == 'blob'), None)
    if blob is not None:
        call('git_blob', lambda: repo.get_git_blob(blob.sha).raw_data)
        call('file_contents', lambda: repo.get_contents(blob.path).raw_data)
    call('root_contents', lambda: [raw(entry) for entry in repo.get_contents('')])
    call('readme', lambda: repo.get_readme().raw_data)
    call('tarball_link', lambda: repo.get_archive_link('tarball').split('?')[0])
    call('rate_limit_core_limit', lambda: g.get_rate_limit().core.limit > 0)
    print(json.dumps(results))


if __name__ == '__main__':
    main()
