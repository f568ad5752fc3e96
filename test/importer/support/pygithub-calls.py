"""PyGithub, used as its users write it, against forgesync's GitHub-compatible API.

Usage: pygithub-calls.py <base_url>   (the read token in $PYGITHUB_TOKEN, never in argv)

Every call after get_repo builds its URL from the `url`/`*_url` fields and the
`Link` headers of earlier answers, and PyGithub refuses one outside base_url:
the calls succeed only when the copy's links point at the copy. Pages of 2
(`per_page=2`) make the lists follow `Link` headers. Prints one JSON object.
"""
import json
import os
import sys

from github import Github


def main() -> None:
    base_url = sys.argv[1]
    g = Github(base_url=base_url, login_or_token=os.environ['PYGITHUB_TOKEN'], per_page=2, retry=None)
    repo = g.get_repo('octocat/Hello-World')
    issues = list(repo.get_issues(state='all'))
    first = repo.get_issue(1)
    comments = list(first.get_comments())
    pulls = list(repo.get_pulls(state='all'))
    result = {
        'repo': {'full_name': repo.full_name, 'description': repo.description, 'url': repo.url, 'html_url': repo.html_url},
        'issues': [{'number': i.number, 'title': i.title, 'state': i.state, 'labels': [l.name for l in i.labels], 'is_pull': i.pull_request is not None} for i in issues],
        'issues_total': repo.get_issues(state='all').totalCount,
        'open_total': repo.get_issues().totalCount,
        'issue_1': {'title': first.title, 'url': first.url, 'html_url': first.html_url, 'comments_url': first.comments_url},
        'comments_of_1': [{'id': c.id, 'body': c.body, 'user': c.user.login} for c in comments],
        # Lazy completion: a user embedded in an issue has no `name`; reading it GETs the user's `url`.
        'author_of_1': {'login': first.user.login, 'name': first.user.name},
        'pulls': [{'number': p.number, 'title': p.title, 'state': p.state} for p in pulls],
        'labels': [{'name': l.name, 'color': l.color} for l in repo.get_labels()],
        'label_total': repo.get_labels().totalCount,
        # reversed fetches the last page by its Link, repeating per_page in the query.
        'labels_reversed': [l.name for l in repo.get_labels().reversed],
        'releases': [r.tag_name for r in repo.get_releases()],
        'milestones': [{'number': m.number, 'title': m.title, 'state': m.state} for m in repo.get_milestones(state='all')],
        'events_of_1': [e.event for e in first.get_events()],
        'pull_6_comments': [c.id for c in pulls[-1].get_review_comments()] if pulls else [],
        'pull_6_reviews': [r.id for r in pulls[-1].get_reviews()] if pulls else [],
        'rate_limit': {'limit': g.get_rate_limit().core.limit, 'remaining': g.get_rate_limit().core.remaining, 'after_calls': g.rate_limiting[0]},
    }
    print(json.dumps(result))


if __name__ == '__main__':
    main()
